package request

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// scopes serves core namespaces and configmaps, and example.com's
// cluster-scoped "namespaces" and "things" and namespaced "widgets".
type scopes map[string]Scope

func (s scopes) Scope(group, version, resource string) Scope {
	return s[group+"/"+version+"/"+resource]
}

var testScopes = scopes{
	"/v1/namespaces":             ScopeCluster,
	"/v1/configmaps":             ScopeNamespaced,
	"example.com/v1/namespaces":  ScopeCluster,
	"example.com/v1/things":      ScopeCluster,
	"example.com/v1/widgets":     ScopeNamespaced,
	"apiextensions.k8s.io/v1/cr": ScopeCluster,
}

func TestRoutable(t *testing.T) {
	cases := []struct {
		method, url string
		routable    bool
	}{
		{"GET", "/api/v1/namespaces", true},
		{"GET", "/api/v1/namespaces/team-a", true},
		{"PUT", "/api/v1/namespaces/team-a/status", true},
		{"PUT", "/api/v1/namespaces/team-a/finalize", true},
		{"DELETE", "/api/v1/namespaces/team-a", true},
		{"GET", "/api/v1/watch/namespaces/team-a", true},
		{"GET", "/api/v1/watch/namespaces", true},
		{"GET", "/api/v1/namespaces?fieldSelector=metadata.name%3Dkube-system", true},
		// The namespace under a namespace: no route, whatever the verb.
		{"GET", "/api/v1/namespaces/team-a/namespaces/kube-system", false},
		{"GET", "/api/v1/namespaces/team-a/namespaces/team-a", false},
		{"PATCH", "/api/v1/namespaces/team-a/namespaces/kube-system", false},
		{"PUT", "/api/v1/namespaces/team-a/namespaces/kube-system/status", false},
		{"DELETE", "/api/v1/namespaces/team-a/namespaces/kube-system", false},
		{"DELETE", "/api/v1/namespaces/team-a/namespaces", false},
		{"POST", "/api/v1/namespaces/team-a/namespaces", false},
		{"GET", "/api/v1/namespaces/team-a/namespaces", false},
		{"GET", "/api/v1/namespaces/team-a/namespaces?watch=1", false},
		{"GET", "/api/v1/watch/namespaces/team-a/namespaces/kube-system", false},
		{"GET", "/api/v1/watch/namespaces/team-a/namespaces", false},
		// Cluster-scoped custom resources: only without a namespace.
		{"GET", "/apis/example.com/v1/things/x", true},
		{"GET", "/apis/example.com/v1/namespaces/team-a/things/x", false},
		{"POST", "/apis/example.com/v1/namespaces/team-a/things", false},
		{"GET", "/apis/example.com/v1/watch/namespaces/team-a/things", false},
		// A cluster-scoped CRD whose plural is "namespaces" is not the
		// core namespaces: its /namespaces/x names the namespace x.
		{"GET", "/apis/example.com/v1/namespaces", true},
		{"GET", "/apis/example.com/v1/namespaces/team-a", false},
		{"DELETE", "/apis/example.com/v1/namespaces/team-a/namespaces/x", false},
		// Namespaced resources route with or without (the router then
		// allows only list and watch).
		{"GET", "/api/v1/namespaces/team-a/configmaps/x", true},
		{"GET", "/api/v1/configmaps", true},
		{"GET", "/apis/example.com/v1/namespaces/team-a/widgets", true},
		// An empty namespace is none: judged cluster-wide, left to the
		// authorizer, then the router (which routes only a custom
		// resource there).
		{"GET", "/api/v1/namespaces//namespaces", true},
		{"GET", "/apis/example.com/v1/namespaces//things/x", true},
		{"GET", "/api/v1/namespaces//configmaps", true},
		// Unknown: decided by the router after authorization.
		{"GET", "/apis/example.com/v1/namespaces/team-a/ghosts/x", true},
	}
	for _, c := range cases {
		info, err := Parse(httptest.NewRequest(c.method, c.url, nil))
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.url, err)
		}
		if got := info.Routable(testScopes.Scope(info.APIGroup, info.APIVersion, info.Resource)); got != c.routable {
			t.Errorf("%s %s (%+v): routable %v, want %v", c.method, c.url, *info, got, c.routable)
		}
	}
}

func TestWithScope(t *testing.T) {
	served := 0
	h := WithRequestInfo(WithScope(testScopes)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
	})))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("DELETE", "/api/v1/namespaces/team-a/namespaces/kube-system", nil))
	var st wire.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 404 || st.Reason != wire.ReasonNotFound || st.Message != "the server could not find the requested resource" || served != 0 {
		t.Fatalf("got %d %+v, served %d", rec.Code, st, served)
	}
	for _, p := range []string{"/api/v1/namespaces/kube-system", "/api/v1/namespaces/team-a/configmaps/x", "/healthz", "/apis/x.io/v1/namespaces/a/ghosts"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", p, nil))
	}
	if served != 4 {
		t.Fatalf("served %d of 4 routable requests", served)
	}
}

// FuzzRoutable: for any request, a cluster-scoped resource is routable
// only where the namespace the authorizer sees is none, or is the
// namespace object the request itself names (/api/v1/namespaces/{name}).
func FuzzRoutable(f *testing.F) {
	for _, s := range []string{
		"/api/v1/namespaces/a/namespaces/b", "/api/v1/namespaces/a/namespaces/a/status", "/api/v1/namespaces/a/status",
		"/api/v1/watch/namespaces/a/namespaces", "/apis/g/v/namespaces/a", "/apis/g/v/namespaces/a/things/b/status",
		"/api/v1/namespaces/a/finalize", "/api/v1/namespaces?fieldSelector=metadata.name=a",
	} {
		f.Add("GET", s)
	}
	f.Add("DELETE", "/api/v1/namespaces/a/namespaces")
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.NewRequest(method, "http://h"+target, nil)
		if err != nil {
			return
		}
		info, err := Parse(r)
		if err != nil || !info.IsResourceRequest {
			return
		}
		// Under an empty namespace only where the path has one
		// (namespaces//), as kube's RequestInfo reads it, even when
		// another empty segment makes the path one no route serves
		// (/api//namespaces//x: version "", namespace "").
		if info.UnderNamespace && info.Namespace == "" && !strings.Contains(r.URL.Path, "namespaces//") {
			t.Fatalf("under no namespace: %+v", info)
		}
		if !info.Routable(ScopeNamespaced) || !info.Routable(ScopeUnknown) {
			t.Fatalf("namespaced or unknown resource not routable: %+v", info)
		}
		if !info.Routable(ScopeCluster) || info.Namespace == "" {
			return
		}
		if info.APIGroup != "" || info.Resource != "namespaces" || info.UnderNamespace || info.Name != info.Namespace {
			t.Fatalf("cluster-scoped resource routable in namespace %q: %+v", info.Namespace, info)
		}
	})
}
