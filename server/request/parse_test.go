package request

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestParse(t *testing.T) {
	cases := []struct {
		method, url string
		want        Info
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "configmaps"}},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "configmaps"}},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=0", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "configmaps"}},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "configmaps", WatchPath: true}},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps/a", Info{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "configmaps", WatchPath: true, Name: "a"}},
		{"GET", "/api/v1/namespaces/ns/configmaps/a", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "configmaps", Name: "a"}},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "configmaps", Name: "a"}},
		{"POST", "/api/v1/namespaces/ns/pods", Info{IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "pods"}},
		{"PUT", "/api/v1/namespaces/ns/pods/p/status", Info{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "pods", Name: "p", Subresource: "status"}},
		{"PATCH", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l", Info{IsResourceRequest: true, Verb: "patch", APIPrefix: "apis", APIGroup: "coordination.k8s.io", APIVersion: "v1", UnderNamespace: true, Namespace: "kube-system", Resource: "leases", Name: "l"}},
		{"DELETE", "/api/v1/namespaces/ns/secrets", Info{IsResourceRequest: true, Verb: "deletecollection", APIPrefix: "api", APIVersion: "v1", UnderNamespace: true, Namespace: "ns", Resource: "secrets"}},
		{"DELETE", "/api/v1/namespaces/ns", Info{IsResourceRequest: true, Verb: "delete", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Name: "ns"}},
		{"PUT", "/api/v1/namespaces/ns/finalize", Info{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Name: "ns", Subresource: "finalize"}},
		{"GET", "/api/v1/namespaces", Info{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces"}},
		{"GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y", Info{IsResourceRequest: true, Verb: "get", APIPrefix: "apis", APIGroup: "apiextensions.k8s.io", APIVersion: "v1", Resource: "customresourcedefinitions", Name: "x.y"}},
		{"GET", "/api", Info{Verb: "get"}},
		{"GET", "/api/v1", Info{Verb: "get"}},
		{"GET", "/apis/apps/v1", Info{Verb: "get"}},
		{"GET", "/healthz", Info{Verb: "get"}},
		{"HEAD", "/version", Info{Verb: "head"}},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.url, nil)
		got, err := Parse(r)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.url, err)
		}
		c.want.Path = r.URL.Path
		if *got != c.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.method, c.url, *got, c.want)
		}
	}
	if _, err := Parse(httptest.NewRequest("GET", "/api/v1/watch", nil)); err == nil {
		t.Error("/api/v1/watch parsed")
	}
}

// TestWithRequestInfoRefusal: a path Parse refuses is kube's plain-text
// 500, whatever the client accepts.
func TestWithRequestInfoRefusal(t *testing.T) {
	h := WithRequestInfo(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("served") }))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/v1/watch?x=<b>", nil)
	req.Header.Set("Accept", "application/json")
	h.ServeHTTP(rec, req)
	want := `Internal Server Error: "/api/v1/watch?x=&lt;b&gt;": failed to create RequestInfo: unable to determine kind and namespace from url, /api/v1/watch?x=&lt;b&gt;` + "\n"
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" || rec.Body.String() != want {
		t.Errorf("%d %s %q, want 500 text/plain %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body, want)
	}
}

func TestWithRequestInfo(t *testing.T) {
	var got *Info
	h := WithRequestInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = InfoFrom(r.Context())
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/pods", nil))
	if got == nil || got.Verb != "list" || got.Resource != "pods" {
		t.Fatalf("info %+v", got)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/watch/", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "failed to create RequestInfo") {
		t.Fatalf("bad path: %d %s", rec.Code, rec.Body)
	}
}

// FuzzParse: any path parses without panicking; a resource request always
// names a version and a resource (but one with an empty segment, read as
// kube reads it, which no route serves) and a known verb, and a name never
// contains a slash.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"/api/v1/namespaces/a/pods/b/status", "/apis/g/v/watch/x", "/api/v1/watch/namespaces/x", "//api//v1", "/api/v1/pods?watch=1&fieldSelector=metadata.name=x"} {
		f.Add("GET", s)
	}
	f.Add("DELETE", "/apis/a/b/c")
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.NewRequest(method, "http://h"+target, nil)
		if err != nil {
			return
		}
		info, err := Parse(r)
		if err != nil {
			return
		}
		if !info.IsResourceRequest {
			return
		}
		if !info.EmptySegment && (info.APIVersion == "" || info.Resource == "") {
			t.Fatalf("%s %q: %+v", method, target, info)
		}
		switch info.Verb {
		case "", "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection":
		default:
			t.Fatalf("verb %q", info.Verb)
		}
		if info.Verb == "deletecollection" && info.Name != "" {
			t.Fatalf("deletecollection with a name: %+v", info)
		}
		if info.APIPrefix == "apis" && info.APIGroup == "" && !info.EmptySegment {
			t.Fatalf("apis without group: %+v", info)
		}
	})
}

// TestParseAsKubeRequestInfo: what Parse tells of a path with an empty
// segment is what kube's RequestInfoFactory tells, which its authorizer
// judges: an empty namespace before a resource
// (/api/v1/namespaces//configmaps) is namespace "", so cluster-wide; any
// other empty segment shifts the parts after it (EmptySegment, which no
// route serves).
func TestParseAsKubeRequestInfo(t *testing.T) {
	kube := &genericrequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	paths := []string{
		"/api/v1/namespaces//configmaps", "/api/v1/namespaces//configmaps/x", "/api/v1/namespaces//configmaps/x/status",
		"/api/v1/namespaces//configmaps?fieldSelector=metadata.name%3Dx", "/api/v1/namespaces//configmaps?watch=1",
		"/api/v1/watch/namespaces//configmaps", "/api/v1/watch/namespaces//configmaps/x", "/apis/apps/v1/namespaces//deployments/x/scale",
		"/apis/g.example.com/v1/watch/namespaces//gizmos", "/api/v1/namespaces//nodes/n", "/api/v1/namespaces//namespaces",
		"/api/v1/namespaces//", "/api/v1/namespaces//status", "/api/v1/namespaces//finalize", "/api/v1/namespaces///configmaps",
		"/api/v1/namespaces//configmaps//x", "/api/v1/namespaces//configmaps/", "/api//v1/namespaces", "/api/v1//namespaces/ns",
		"/api/v1/namespaces/ns//configmaps", "/apis/apps//v1/deployments", "/api/v1/configmaps//x", "/api/v1/namespaces/ns/pods//status",
		"/api//namespaces//configmaps", "/apis/apps//namespaces//deployments/x",
	}
	for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		for _, p := range paths {
			r := httptest.NewRequest(method, p, nil)
			got, err := Parse(r)
			if err != nil {
				t.Fatalf("%s %s: %v", method, p, err)
			}
			want, err := kube.NewRequestInfo(r)
			if err != nil {
				t.Fatalf("kube: %s %s: %v", method, p, err)
			}
			g := Info{IsResourceRequest: got.IsResourceRequest, Verb: got.Verb, APIPrefix: got.APIPrefix, APIGroup: got.APIGroup,
				APIVersion: got.APIVersion, Namespace: got.Namespace, Resource: got.Resource, Subresource: got.Subresource, Name: got.Name}
			w := Info{IsResourceRequest: want.IsResourceRequest, Verb: want.Verb, APIPrefix: want.APIPrefix, APIGroup: want.APIGroup,
				APIVersion: want.APIVersion, Namespace: want.Namespace, Resource: want.Resource, Subresource: want.Subresource, Name: want.Name}
			if g != w {
				t.Errorf("%s %s:\n got  %+v\n kube %+v", method, p, g, w)
			}
			trimmed := strings.Trim(r.URL.Path, "/")
			inner := strings.Contains(trimmed, "//")
			emptyNS := strings.Count(trimmed, "//") == 1 && !strings.Contains(trimmed, "///") && strings.Contains(trimmed, "/namespaces//") &&
				!strings.HasSuffix(trimmed, "//status") && !strings.HasSuffix(trimmed, "//finalize")
			if got.EmptySegment != (inner && !emptyNS) || emptyNS && !got.UnderNamespace {
				t.Errorf("%s %s: EmptySegment %v, UnderNamespace %v", method, p, got.EmptySegment, got.UnderNamespace)
			}
		}
	}
}
