package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/wire"
)

func clusterCRD(plural, kind string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + `.example.com"},
"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"` + plural + `","singular":"` + strings.ToLower(kind) + `","kind":"` + kind + `"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
}

// TestNamespaceScopedUserCannotReachClusterResources: a user whose ABAC
// policy allows everything in namespace team-a, and nothing else, cannot
// reach a namespace or a cluster-scoped custom resource by putting it
// under /namespaces/team-a/: every such path is 404 (no route, decided
// before authorization), the cluster-scoped paths proper are 403, and
// nothing in storage changes.
func TestNamespaceScopedUserCannotReachClusterResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	policy := filepath.Join(dir, "policy.jsonl")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,2001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"team-a","resource":"*","apiGroup":"*"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.TokenAuthFile = tokens
		o.AuthorizationPolicyFile = policy
	})
	c := httpsClient(t, s)
	admin := s.Credentials().AdminToken
	u := s.URL()
	for _, step := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"metadata":{"name":"team-a"}}`},
		{"/api/v1/namespaces", `{"metadata":{"name":"victim"}}`},
		{"/api/v1/namespaces/victim/configmaps", `{"metadata":{"name":"c"}}`},
		{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", clusterCRD("gadgets", "Gadget")},
		{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", clusterCRD("namespaces", "Space")},
		{"/apis/example.com/v1/gadgets", `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1"}}`},
		{"/apis/example.com/v1/namespaces", `{"apiVersion":"example.com/v1","kind":"Space","metadata":{"name":"team-a"}}`},
		{"/apis/example.com/v1/namespaces", `{"apiVersion":"example.com/v1","kind":"Space","metadata":{"name":"victim"}}`},
	} {
		if code, st := doStatus(t, c, "POST", u+step.path, admin, []byte(step.body)); code != 201 {
			t.Fatalf("POST %s: %d %s", step.path, code, st.Message)
		}
	}
	before := snapshot(t, c, u, admin)

	nsObj := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"victim","labels":{"owned":"yes"}}}`)
	patch := []byte(`{"metadata":{"labels":{"owned":"yes"}}}`)
	notFound := []struct {
		method, path string
		body         []byte
	}{
		{"GET", "/api/v1/namespaces/team-a/namespaces/victim", nil},
		{"PUT", "/api/v1/namespaces/team-a/namespaces/victim", nsObj},
		{"PATCH", "/api/v1/namespaces/team-a/namespaces/victim", patch},
		{"PUT", "/api/v1/namespaces/team-a/namespaces/victim/status", nsObj},
		{"DELETE", "/api/v1/namespaces/team-a/namespaces/victim", nil},
		{"GET", "/api/v1/namespaces/team-a/namespaces", nil},
		{"GET", "/api/v1/namespaces/team-a/namespaces?watch=1&timeoutSeconds=1", nil},
		{"GET", "/api/v1/watch/namespaces/team-a/namespaces/victim?timeoutSeconds=1", nil},
		{"POST", "/api/v1/namespaces/team-a/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"evil"}}`)},
		{"DELETE", "/api/v1/namespaces/team-a/namespaces", nil},
		{"GET", "/apis/example.com/v1/namespaces/team-a/gadgets/g1", nil},
		{"PATCH", "/apis/example.com/v1/namespaces/team-a/gadgets/g1", patch},
		{"DELETE", "/apis/example.com/v1/namespaces/team-a/gadgets/g1", nil},
		{"POST", "/apis/example.com/v1/namespaces/team-a/gadgets", []byte(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"evil"}}`)},
		{"GET", "/apis/example.com/v1/watch/namespaces/team-a/gadgets?timeoutSeconds=1", nil},
		// The cluster-scoped Space named team-a, and its siblings.
		{"GET", "/apis/example.com/v1/namespaces/team-a", nil},
		{"PATCH", "/apis/example.com/v1/namespaces/team-a", patch},
		{"DELETE", "/apis/example.com/v1/namespaces/team-a", nil},
		{"DELETE", "/apis/example.com/v1/namespaces/team-a/namespaces/victim", nil},
	}
	for _, tc := range notFound {
		code, st := doStatusPatch(t, c, tc.method, u+tc.path, "alice-token", tc.body)
		// kube's 404 for no route: a Status under its built-in API, Go's
		// plain "404 page not found" (no Status) under a custom
		// resource's group.
		want := wire.Status{Reason: wire.ReasonNotFound, Message: "the server could not find the requested resource"}
		if strings.HasPrefix(tc.path, "/apis/example.com/") {
			want = wire.Status{}
		}
		if code != 404 || st.Reason != want.Reason || st.Message != want.Message {
			t.Errorf("%s %s: %d %q %q, want kube's 404 for an unknown path", tc.method, tc.path, code, st.Reason, st.Message)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"DELETE", "/api/v1/namespaces/victim"},
		{"GET", "/api/v1/namespaces"},
		{"GET", "/apis/example.com/v1/gadgets/g1"},
		{"GET", "/apis/example.com/v1/namespaces"},
	} {
		if code, st := doStatus(t, c, tc.method, u+tc.path, "alice-token", nil); code != 403 || st.Reason != wire.ReasonForbidden {
			t.Errorf("%s %s: %d %q %q, want 403", tc.method, tc.path, code, st.Reason, st.Message)
		}
	}
	// Her own namespace she may read, as kube's ABAC allows.
	if code, st := doStatus(t, c, "GET", u+"/api/v1/namespaces/team-a", "alice-token", nil); code != 200 {
		t.Errorf("GET own namespace: %d %s", code, st.Message)
	}
	if after := snapshot(t, c, u, admin); after != before {
		t.Fatalf("storage changed:\nbefore %s\nafter  %s", before, after)
	}
}

// doStatusPatch is doStatus sending a PATCH as a JSON merge patch.
func doStatusPatch(t *testing.T, c *http.Client, method, url, token string, body []byte) (int, wire.Status) {
	t.Helper()
	if method != "PATCH" {
		return doStatus(t, c, method, url, token, body)
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var st wire.Status
	_ = json.Unmarshal(data, &st)
	return resp.StatusCode, st
}

// snapshot is every namespace, configmap in victim, gadget and space, by
// name and resourceVersion.
func snapshot(t *testing.T, c *http.Client, u, token string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/api/v1/namespaces", "/api/v1/namespaces/victim/configmaps", "/apis/example.com/v1/gadgets", "/apis/example.com/v1/namespaces"} {
		req, err := http.NewRequest("GET", u+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var l struct {
			Items []struct {
				Metadata struct {
					Name, ResourceVersion string
					Labels                map[string]string
				}
			}
		}
		if resp.StatusCode != 200 || json.Unmarshal(data, &l) != nil {
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, data)
		}
		b.WriteString(p + ":")
		for _, it := range l.Items {
			b.WriteString(" " + it.Metadata.Name + "@" + it.Metadata.ResourceVersion)
			if len(it.Metadata.Labels) > 0 {
				b.WriteString("+labels")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
