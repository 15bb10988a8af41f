package server

import (
	"net/http"
	"testing"
)

// TestRouteMethods: a path kube's installer routes for some methods
// answers another with its router's 405 Status, before the body's type is
// looked at: the GET, PUT and PATCH subresources (status, scale,
// ephemeralcontainers, resize, approval), a /watch/ path (GET only), the
// create-only collections (POST only), and HEAD on any built-in path but
// the proxies, whose 405 carries kube's headers and no body. A path with
// no route stays a 404 whatever the method
// (TestKubeRouteMethodsSameAsOurs compares them with kube-apiserver).
func TestRouteMethods(t *testing.T) {
	e := newEnv(t)
	const msg = "the server does not allow this method on the requested resource"
	ns := "/api/v1/namespaces/default"
	apps := "/apis/apps/v1/namespaces/default"
	subresources := []string{
		apps + "/deployments/x/scale", apps + "/deployments/x/status",
		ns + "/replicationcontrollers/x/scale", ns + "/replicationcontrollers/x/status",
		"/apis/policy/v1/namespaces/default/poddisruptionbudgets/x/status", "/api/v1/namespaces/default/status",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x/status",
		ns + "/pods/x/ephemeralcontainers", ns + "/pods/x/resize",
		"/apis/certificates.k8s.io/v1/certificatesigningrequests/x/approval",
	}
	for _, method := range []string{"POST", "DELETE", "OPTIONS", "TRACE", "FOO"} {
		for _, p := range subresources {
			e.expectStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", msg, method, p, "{}")
		}
	}
	watches := []string{"/api/v1/watch/namespaces/default/configmaps", "/api/v1/watch/namespaces/default/configmaps/x", "/api/v1/watch/configmaps"}
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS", "FOO"} {
		for _, p := range watches {
			e.expectStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", msg, method, p, "{}")
		}
	}
	for _, p := range []string{ns + "/bindings", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "/api/v1/componentstatuses"} {
		e.expectStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", msg, "PATCH", p, "{}")
	}
	for _, p := range append(subresources, append(watches,
		ns+"/configmaps", ns+"/configmaps/x", "/api/v1/configmaps", "/api/v1/namespaces/default", "/api/v1/namespaces",
		"/api/v1/componentstatuses", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")...) {
		r := e.do("HEAD", p, nil)
		if r.code != http.StatusMethodNotAllowed || len(r.body) != 0 ||
			r.hdr.Get("Content-Type") != "application/json" || r.hdr.Get("Content-Length") != "197" {
			t.Errorf("HEAD %s: %d %v %q, want kube's 405 with no body", p, r.code, r.hdr, r.body)
		}
	}
	for _, method := range []string{"HEAD", "GET", "POST", "PATCH", "OPTIONS"} {
		for _, p := range []string{"/api/v1/watch/configmaps/x", ns + "/bindings/x", ns + "/configmaps/x/foo",
			"/api/v1/watch/namespaces/default/configmaps/x/status", "/apis/authorization.k8s.io/v1/watch/selfsubjectaccessreviews"} {
			if r := e.do(method, p, "{}"); r.code != http.StatusNotFound {
				t.Errorf("%s %s: %d %s, want 404", method, p, r.code, r.body)
			}
		}
	}
}
