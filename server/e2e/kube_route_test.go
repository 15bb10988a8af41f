package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// customResourcesSideBySide serves, on each client's server, Gizmos
// (namespaced) and Gadgets (cluster-scoped) of group <ns>.example.com,
// both with status and scale subresources, deleted when the test ends,
// and returns the group version's path.
func customResourcesSideBySide(t *testing.T, ns string, clients ...*rawClient) string {
	t.Helper()
	group := ns + ".example.com"
	gv := "/apis/" + group + "/v1"
	kinds := []struct{ plural, kind, scope, collection string }{
		{"gizmos", "Gizmo", "Namespaced", gv + "/namespaces/" + ns + "/gizmos"},
		{"gadgets", "Gadget", "Cluster", gv + "/gadgets"},
	}
	for _, c := range clients {
		for _, k := range kinds {
			crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + k.plural + `.` + group + `"},` +
				`"spec":{"group":"` + group + `","scope":"` + k.scope + `","names":{"plural":"` + k.plural + `","singular":"` + strings.ToLower(k.kind) + `","kind":"` + k.kind + `"},` +
				`"versions":[{"name":"v1","served":true,"storage":true,` + scaleSubresources +
				`"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
			if code, m := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jsonCT, crd); code != http.StatusCreated {
				t.Fatalf("crd %s: %d %v", k.plural, code, m)
			}
			t.Cleanup(func() {
				c.do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+k.plural+"."+group, "", "")
			})
		}
		for _, k := range kinds {
			c.await(k.collection+"?dryRun=All", `{"apiVersion":"`+group+`/v1","kind":"`+k.kind+`","metadata":{"name":"a"}}`,
				func(code int, _ map[string]any) bool { return code == http.StatusCreated })
		}
	}
	return gv
}

// exactAnswer describes an answer for comparison: code, content type
// (and a HEAD's length) and the whole body of a Status (or of a plain
// text answer); of anything else, its kind.
func (c *rawClient) exactAnswer(method, path, ctype, body string) string {
	c.t.Helper()
	code, hdr, b := c.send(method, path, ctype, "application/json", body)
	out := fmt.Sprintf("%d %s", code, hdr.Get("Content-Type"))
	if method == http.MethodHead {
		out += " length " + c.headLength(path, ctype, code, hdr.Get("Content-Length"))
	}
	var m map[string]any
	switch {
	case json.Unmarshal(b, &m) != nil:
		return out + fmt.Sprintf(" %q", b)
	case m["kind"] == "Status":
		return out + " " + strings.TrimSpace(string(b))
	}
	return out + fmt.Sprintf(" kind=%v", m["kind"])
}

// headLength is a HEAD's Content-Length for comparison across servers: a
// 200's (an object's or a list's) less the length of the resourceVersion
// a GET of the same path answers with right after, as "N+rv". Two
// servers' resourceVersions are numbers of their own etcd's, so one may
// have a digit more than the other's (a list's length then differed by
// one, now and then).
func (c *rawClient) headLength(path, ctype string, code int, length string) string {
	c.t.Helper()
	n, err := strconv.Atoi(length)
	if code != http.StatusOK || err != nil {
		return length
	}
	_, _, b := c.send(http.MethodGet, path, ctype, "application/json", "")
	var v struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(b, &v) != nil || v.Metadata.ResourceVersion == "" {
		return length
	}
	return fmt.Sprintf("%d+rv", n-len(v.Metadata.ResourceVersion))
}

// TestKubePathNamesSameAsOurs: a name in the path that cannot be a path
// segment ("%2E", "%2E%2E", "a%25b"; "/" sent as %2F splits the path) is
// kube's store's 400 "Name parameter invalid" on a GET, PUT, PATCH or
// DELETE of a built-in or custom object or of its status or scale, once
// kube's handler has read what it reads first (a PUT's body, a patch's
// type).
func TestKubePathNamesSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	group := strings.Split(gv, "/")[2]
	// Each collection, with an object of its kind (for a PUT).
	collections := []struct{ path, apiVersion, kind string }{
		{"/api/v1/namespaces/" + ns + "/configmaps", "v1", "ConfigMap"},
		{"/api/v1/namespaces", "v1", "Namespace"},
		{"/api/v1/nodes", "v1", "Node"},
		{"/apis/apps/v1/namespaces/" + ns + "/deployments", "apps/v1", "Deployment"},
		{gv + "/namespaces/" + ns + "/gizmos", group + "/v1", "Gizmo"},
		{gv + "/gadgets", group + "/v1", "Gadget"},
	}
	names := []struct{ sent, name string }{{"%2E", "."}, {"%2E%2E", ".."}, {"a%25b", "a%b"}, {"a%2Fb", "a/b"}, {"a%252Fb", "a%2Fb"}}
	for _, col := range collections {
		for _, n := range names {
			for _, sub := range []string{"", "/status", "/scale"} {
				p := col.path + "/" + n.sent + sub
				kind, apiVersion := col.kind, col.apiVersion
				if sub == "/scale" {
					kind, apiVersion = "Scale", "autoscaling/v1"
				}
				named := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q}}`, apiVersion, kind, n.name)
				reqs := []struct{ method, ctype, body string }{
					{"GET", "", ""},
					{"PUT", jsonCT, `{}`}, {"PUT", jsonCT, named},
					{"PATCH", jsonCT, `{}`}, {"PATCH", "application/merge-patch+json", `{}`},
					{"PATCH", "application/json-patch+json", `[]`},
				}
				if sub == "" { // a DELETE of a subresource is a method's question (kube_methods_test.go)
					reqs = append(reqs, struct{ method, ctype, body string }{"DELETE", "", ""})
				}
				for _, r := range reqs {
					k, o := kube.exactAnswer(r.method, p, r.ctype, r.body), ours.exactAnswer(r.method, p, r.ctype, r.body)
					if k != o {
						t.Errorf("%s %s %s:\n kube:  %s\n serve: %s", r.method, p, r.body, k, o)
					}
				}
			}
		}
	}
	// A resourceVersion kube's versioner does not parse: a watch's 500
	// (its cacher's error is no API status), on the /watch/ path too, a
	// list's 400, built-in and custom resources alike, in JSON and
	// protobuf, byte for byte.
	for _, col := range collections {
		for _, rv := range []string{"abc", "-1", "18446744073709551616"} {
			for _, p := range []string{col.path + "?watch=1&", strings.Replace(col.path, "/v1/", "/v1/watch/", 1) + "?",
				col.path + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&", col.path + "?"} {
				for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
					var answers [2]string
					for i, c := range []*rawClient{kube, ours} {
						code, hdr, b := c.send("GET", p+"timeoutSeconds=1&resourceVersion="+rv, "", accept, "")
						answers[i] = fmt.Sprintf("%d %s %q", code, hdr.Get("Content-Type"), b)
					}
					if answers[0] != answers[1] {
						t.Errorf("GET %sresourceVersion=%s (%s):\n kube:  %s\n serve: %s", p, rv, accept, answers[0], answers[1])
					}
				}
			}
		}
	}
	// A custom resource is stored as encoding/json of its map: its
	// create's and update's answers, GET, list and watch events have
	// every object's keys in order, whatever order they were sent in
	// (metadata.resourceVersion among them), and keep a number's text.
	masks := []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`"(resourceVersion|uid|creationTimestamp|time)":"[^"]*"`), `"$1":"x"`},
	}
	crBody := func(b []byte) string {
		s := strings.TrimSpace(string(b))
		for _, m := range masks {
			s = m.re.ReplaceAllString(s, m.with)
		}
		return s
	}
	gizmos := gv + "/namespaces/" + ns + "/gizmos"
	var orders [2][]string
	for i, c := range []*rawClient{kube, ours} {
		code, _, b := c.send("POST", gizmos, jsonCT, "application/json", `{"spec":{"zeta":{"y":[{"b":1,"a":2.50}],"x":"<&>"},"Alpha":true,"m":1e3},"metadata":{"name":"ordered","labels":{"z":"1","a":"2"}},"kind":"Gizmo","apiVersion":"`+group+`/v1","Top":1}`)
		var created struct {
			Metadata struct{ ResourceVersion string }
		}
		if err := json.Unmarshal(b, &created); code != http.StatusCreated || err != nil {
			t.Fatalf("create: %d %s", code, b)
		}
		orders[i] = append(orders[i], crBody(b))
		_, _, b = c.send("PUT", gizmos+"/ordered", jsonCT, "application/json", `{"metadata":{"name":"ordered","resourceVersion":"`+created.Metadata.ResourceVersion+`"},"apiVersion":"`+group+`/v1","kind":"Gizmo","spec":{"q":{"d":1,"c":2},"b":[]}}`)
		orders[i] = append(orders[i], crBody(b))
		_, _, b = c.send("GET", gizmos+"/ordered", "", "application/json", "")
		orders[i] = append(orders[i], crBody(b))
		_, _, b = c.send("GET", gizmos, "", "application/json", "")
		orders[i] = append(orders[i], crBody(b))
		_, _, b = c.send("GET", gizmos+"?watch=1&timeoutSeconds=1&resourceVersion="+created.Metadata.ResourceVersion, "", "application/json", "")
		orders[i] = append(orders[i], crBody(b))
	}
	for j, what := range []string{"create", "update", "get", "list", "watch"} {
		if orders[0][j] != orders[1][j] {
			t.Errorf("custom resource's keys, %s:\n kube:  %s\n serve: %s", what, orders[0][j], orders[1][j])
		}
	}
	// The other subresources read the object where kube's do.
	api := "/api/v1/namespaces/" + ns
	for _, n := range names[:3] {
		named := func(apiVersion, kind, rest string) string {
			return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q}%s}`, apiVersion, kind, n.name, rest)
		}
		for _, r := range []struct{ method, path, ctype, body string }{
			{"GET", api + "/pods/" + n.sent + "/log", "", ""},
			{"GET", api + "/pods/" + n.sent + "/exec?command=ls", "", ""},
			{"GET", api + "/pods/" + n.sent + "/proxy", "", ""},
			{"GET", "/api/v1/nodes/" + n.sent + "/proxy", "", ""},
			{"GET", api + "/services/" + n.sent + "/proxy", "", ""},
			{"GET", api + "/services/" + n.sent + ":80/proxy", "", ""},
			{"GET", api + "/pods/" + n.sent + "/ephemeralcontainers", "", ""},
			{"PUT", api + "/pods/" + n.sent + "/ephemeralcontainers", jsonCT, named("v1", "Pod", "")},
			{"PATCH", api + "/pods/" + n.sent + "/resize", "application/merge-patch+json", `{}`},
			{"POST", api + "/pods/" + n.sent + "/eviction", jsonCT, named("policy/v1", "Eviction", "")},
			{"POST", api + "/pods/" + n.sent + "/binding", jsonCT, named("v1", "Binding", `,"target":{"kind":"Node","name":"n"}`)},
			{"POST", api + "/bindings", jsonCT, named("v1", "Binding", `,"target":{"kind":"Node","name":"n"}`)},
			{"POST", api + "/serviceaccounts/" + n.sent + "/token", jsonCT, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
			{"PUT", "/api/v1/namespaces/" + n.sent + "/finalize", jsonCT, named("v1", "Namespace", "")},
			{"GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests/" + n.sent + "/approval", "", ""},
		} {
			k, o := kube.exactAnswer(r.method, r.path, r.ctype, r.body), ours.exactAnswer(r.method, r.path, r.ctype, r.body)
			if k != o {
				t.Errorf("%s %s %s:\n kube:  %s\n serve: %s", r.method, r.path, r.body, k, o)
			}
		}
	}
}

// TestKubeUncleanPathsSameAsOurs: kube-apiserver routes a path as sent:
// one with an empty, "." or ".." segment is not redirected to its clean
// form (Go's ServeMux's 307, which a client follows with the same
// method) but answered as such, a 404 where no route takes it (a Status
// under kube's own prefixes, Go's text elsewhere), or the 400 of a name
// "." or ".." (or of an empty namespace). serve answers each alike.
func TestKubeUncleanPathsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	gv := customResourcesSideBySide(t, ns, kube, ours)
	api := "/api/v1/namespaces/" + ns
	// An empty namespace is a namespace kube's router takes, as "": the
	// store's 400 for an object, a custom resource's 404 but for a list
	// (TestKubeEmptyNamespaceSameAsOurs compares the collections too).
	paths := []string{
		"/api/v1/namespaces//configmaps/x", "/api/v1/namespaces///configmaps", "/api/v1/namespaces//configmaps//x",
		"/api/v1/namespaces//status", "/api/v1/namespaces//nodes", gv + "/namespaces//gizmos", gv + "/namespaces//gizmos/x",
		"/api//v1/namespaces", "/api/v1/./namespaces", "/api/v1//namespaces/" + ns, "/api/v1/namespaces/./" + ns,
		api + "//configmaps", api + "/configmaps//", api + "/configmaps/./x",
		api + "/configmaps/../configmaps", "//api/v1/namespaces", "//api/v1/namespaces/" + ns, "/apis/apps//v1", "/apis//",
		"/./api", "//version", "//apis", "/version/.", "/healthz/..", "/readyz/.", "/openapi/v2/.", "/metrics/..",
		api + "/configmaps/.", api + "/configmaps/..", "/api/v1/nodes/..", "/api/v1/namespaces/.", "/api/v1/namespaces/..",
		"/apis/apps/v1/namespaces/" + ns + "/deployments/../scale", api + "/configmaps/../status", "/api/v1/nodes/./status",
		"/apis/example.com//v1", "//apis/example.com/v1",
		gv + "//gadgets", gv + "/gadgets/..", gv + "/gadgets/./status", gv + "/namespaces/" + ns + "/gizmos/.",
		gv + "/namespaces/" + ns + "/gizmos/../scale", "/" + gv,
	}
	for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		for _, p := range paths {
			ctype := writeType(method)
			k, o := kube.exactAnswer(method, p, ctype, "{}"), ours.exactAnswer(method, p, ctype, "{}")
			if k != o {
				t.Errorf("%s %s:\n kube:  %s\n serve: %s", method, p, k, o)
			}
		}
	}
}

// TestKubeTimeoutParameterSameAsOurs: kube-apiserver reads a request's
// timeout parameter (WithRequestDeadline) before it authenticates the
// request, so a malformed one is its 400, in the media type the client
// accepts, for an anonymous client too (not the 401); a watch (or a log)
// does not read it. The 401s are compared too, in every media type.
func TestKubeTimeoutParameterSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	kcfg, err := clientcmd.BuildConfigFromFlags("", ks.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "")
	kube, ours := newRawClient(t, rest.AnonymousClientConfig(kcfg)), newRawClient(t, rest.AnonymousClientConfig(restConfig(t, s)))
	for _, p := range []string{
		"/api/v1/namespaces?timeout=abc", "/api/v1/namespaces/default/configmaps/x?timeout=1x", "/apis/apps/v1/deployments?timeout=-",
		"/api/v1/namespaces?watch=1&timeout=abc", "/api/v1/namespaces/default/pods/x/log?timeout=abc", "/metrics?timeout=abc",
	} {
		for _, accept := range []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"} {
			for _, method := range []string{"GET", "POST"} {
				kc, kh, kb := kube.send(method, p, jsonCT, accept, "{}")
				oc, oh, ob := ours.send(method, p, jsonCT, accept, "{}")
				k := fmt.Sprintf("%d %s %q", kc, kh.Get("Content-Type"), kb)
				o := fmt.Sprintf("%d %s %q", oc, oh.Get("Content-Type"), ob)
				if k != o {
					t.Errorf("anonymous %s %s [%s]:\n kube:  %s\n serve: %s", method, p, accept, k, o)
				}
			}
		}
	}
}

// TestKubeFilterRefusalsSameAsOurs: what kube-apiserver's filters and its
// handler of unknown paths answer before any resource handler, in every
// media type a client may ask for: an anonymous client's 401, a user's
// 403 (RBAC refuses an impersonated user with no roles), a path no group
// serves (404) and a /watch path naming nothing (kube's plain-text 500).
func TestKubeFilterRefusalsSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	kcfg, err := clientcmd.BuildConfigFromFlags("", ks.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "")
	ocfg := restConfig(t, s)
	nobody := func(cfg *rest.Config) *rest.Config {
		cfg = rest.CopyConfig(cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "nobody", Groups: []string{"system:authenticated"}}
		return cfg
	}
	for _, who := range []struct {
		name       string
		kube, ours *rest.Config
		paths      []string
	}{
		{"anonymous", rest.AnonymousClientConfig(kcfg), rest.AnonymousClientConfig(ocfg), []string{"/api/v1/namespaces/default/pods", "/apis/apps/v1", "/nope"}},
		{"nobody", nobody(kcfg), nobody(ocfg), []string{"/api/v1/namespaces/default/pods", "/api/v1/nodes/n", "/apis/apps/v1/deployments"}},
		{"admin", kcfg, ocfg, []string{"/apis/nope.example.com/v1/things", "/nope/x", "/api/v1/watch", "/apis/apps/v1/watch/?x=%3Cb%3E"}},
	} {
		kube, ours := newRawClient(t, who.kube), newRawClient(t, who.ours)
		for _, p := range who.paths {
			for _, accept := range []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf, application/json", "text/html", ""} {
				kc, kh, kb := kube.send("GET", p, "", accept, "")
				oc, oh, ob := ours.send("GET", p, "", accept, "")
				k := fmt.Sprintf("%d %s %q", kc, kh.Get("Content-Type"), kb)
				o := fmt.Sprintf("%d %s %q", oc, oh.Get("Content-Type"), ob)
				if kc < 400 {
					t.Errorf("%s GET %s [%s]: kube answered %s", who.name, p, accept, k)
				}
				if k != o {
					t.Errorf("%s GET %s [%s]:\n kube:  %s\n serve: %s", who.name, p, accept, k, o)
				}
			}
		}
	}
}
