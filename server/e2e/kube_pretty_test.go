package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestKubePrettySameAsOurs: the same requests to kube-apiserver and to
// serve, as curl and as another client, with and without pretty: the
// same bytes, Status errors and discovery alike (kube indents JSON for
// curl, Wget, browsers and pretty=true, and ends a compact answer with
// a newline), and the same 404s for paths nothing serves.
func TestKubePrettySameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	// A namespaced custom resource, so that its group is served.
	const prettyPlural = "prettywidgets"
	for _, c := range []*rawClient{kube, ours} {
		if code, m := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jsonCT, crCRD(prettyPlural, "PrettyWidget", "")); code != http.StatusCreated && code != http.StatusConflict {
			t.Fatalf("crd: %d %v", code, m)
		}
		c.waitServed(prettyPlural)
	}
	get := func(c *rawClient, method, path, ua, body string) string {
		t.Helper()
		hdr := http.Header{"User-Agent": {ua}}
		if body != "" {
			hdr.Set("Content-Type", jsonCT)
		}
		code, h, b := c.sendWith(method, path, hdr, body)
		// The one value that differs: each server's own address.
		return fmt.Sprintf("%d %s\n%s", code, h.Get("Content-Type"), strings.ReplaceAll(string(b), strings.TrimPrefix(c.host, "https://"), "HOST"))
	}
	pretty := 0
	for _, ua := range []string{"curl/8.5.0", "Mozilla/5.0 (X11)", "lw-e2e/1"} {
		for _, step := range []struct{ method, path, body string }{
			{"GET", cms + "/missing", ""},
			{"GET", cms + "/missing?pretty=true", ""},
			{"GET", cms + "/missing?pretty=false", ""},
			{"GET", "/api", ""},
			{"GET", "/apis/apps", ""},
			{"GET", "/api/v1/namespaces/missing", ""},
			// Paths no route serves: a Status under kube's built-in API,
			// Go's plain 404 elsewhere (an unknown group, a custom
			// resource's group, outside the API).
			{"GET", "/no/such/path", ""},
			{"GET", "/apis/no.such.group", ""},
			{"GET", "/apis/no.such.group/v1/things", ""},
			{"GET", "/api/v2", ""},
			{"GET", "/api/v1/things", ""},
			{"GET", "/apis/apps/v9", ""},
			{"GET", "/apis/apps/v1/namespaces/" + ns + "/things", ""},
			{"GET", "/version/x", ""},
			{"GET", "/openapi/v9", ""},
			{"GET", "/apis/" + crGroup + "/v9", ""},
			{"GET", "/apis/" + crGroup + "/v1/namespaces/" + ns + "/things", ""},
			{"GET", "/apis/" + crGroup + "/v1/" + prettyPlural + "/x", ""},
			// Health: each check's own path, kube's handlers; other
			// paths below them are Go's plain 404.
			{"GET", "/healthz", ""},
			{"GET", "/livez?exclude=etcd", ""},
			{"GET", "/readyz/ping", ""},
			{"GET", "/readyz/etcd", ""},
			{"GET", "/livez/etcd", ""},
			{"GET", "/healthz/shutdown", ""},
			{"GET", "/readyz/no-such-check", ""},
			{"GET", "/healthz/", ""},
			{"GET", "/readyz/ping/x", ""},
			{"POST", cms + "?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}`},
			{"POST", cms + "?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":1}}`},
		} {
			k, o := get(kube, step.method, step.path, ua, step.body), get(ours, step.method, step.path, ua, step.body)
			if k != o {
				t.Errorf("%s %s as %q:\n kube  %q\n serve %q", step.method, step.path, ua, k, o)
			}
			if strings.Contains(k, "\n  \"") {
				pretty++
			}
		}
	}
	if pretty == 0 {
		t.Error("kube indented no answer")
	}
}
