package server

import (
	"bytes"
	"net/http"
	"testing"
)

// TestGetOnlyPaths: /version, /api and a group version's discovery
// document take GET only: another method, HEAD too, is the router's 405
// Status (in protobuf when asked), as kube-apiserver's; /apis, /apis/{g},
// OpenAPI and the health checks answer any method as GET, and a missing
// group version is still a 404 (TestKubeNonResourceMethodsSameAsOurs
// compares all of them with a real kube-apiserver).
func TestGetOnlyPaths(t *testing.T) {
	e := newEnv(t)
	const msg = "the server does not allow this method on the requested resource"
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		for _, p := range []string{"/version", "/version/", "/api", "/api/", "/api/v1", "/apis/apps/v1", "/apis/apps/v1/"} {
			e.expectStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", msg, method, p, nil)
		}
		e.expectStatus(http.StatusNotFound, "NotFound", "", method, "/apis/apps/v9", nil)
		for _, p := range []string{"/apis", "/apis/apps", "/openapi/v2", "/healthz"} {
			if r := e.do(method, p, nil); r.code != http.StatusOK {
				t.Fatalf("%s %s: %d %s", method, p, r.code, r.body)
			}
		}
	}
	for _, p := range []string{"/version", "/api/v1"} {
		if r := e.do("HEAD", p, nil); r.code != http.StatusMethodNotAllowed {
			t.Fatalf("HEAD %s: %d", p, r.code)
		}
		if r := e.do("GET", p, nil); r.code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.code, r.body)
		}
	}
	r := e.do("POST", "/apis/apps/v1", nil, "Accept", "application/vnd.kubernetes.protobuf")
	if r.code != http.StatusMethodNotAllowed || r.hdr.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("POST /apis/apps/v1 asking for protobuf: %d %s", r.code, r.hdr.Get("Content-Type"))
	}
}

// TestDiscoveryMedia: the legacy discovery documents, and a missing
// one's 404, come in the media type asked for, as kube-apiserver's; an
// Accept none of them matches is the router's 406 on its GET routes and
// the negotiation's on /apis and /apis/{g}
// (TestKubeDiscoveryMediaSameAsOurs compares them with kube-apiserver).
func TestDiscoveryMedia(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1"} {
		for _, mt := range []string{"application/vnd.kubernetes.protobuf", "application/yaml", "application/json"} {
			r := e.do("GET", p, nil, "Accept", mt)
			if r.code != http.StatusOK || r.hdr.Get("Content-Type") != mt {
				t.Fatalf("GET %s [%s]: %d %s", p, mt, r.code, r.hdr.Get("Content-Type"))
			}
		}
	}
	r := e.do("GET", "/apis/apps", nil, "Accept", "application/vnd.kubernetes.protobuf")
	if !bytes.HasPrefix(r.body, []byte("k8s\x00")) || !bytes.Contains(r.body, []byte("APIGroup")) {
		t.Fatalf("GET /apis/apps in protobuf: %q", r.body)
	}
	r = e.do("GET", "/apis/apps/v9", nil, "Accept", "application/vnd.kubernetes.protobuf")
	if r.code != http.StatusNotFound || r.hdr.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("GET /apis/apps/v9 asking for protobuf: %d %s", r.code, r.hdr.Get("Content-Type"))
	}
	e.expectStatus(http.StatusNotAcceptable, "NotAcceptable",
		"406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf",
		"GET", "/api/v1", nil, "Accept", "text/html")
	e.expectStatus(http.StatusNotAcceptable, "NotAcceptable",
		"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
		"GET", "/apis/apps", nil, "Accept", "text/html")
}
