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

// TestCustomResourceMethods: as kube's CRD handler, which any method
// reaches, a custom resource's paths answer by the verb kube's request
// info reads from the method: a PUT of the collection is the update
// handler's 400 for the missing name (before Accept), a PATCH there the
// patch type's 415 or that 400, a POST on an object a create of the
// body's object; a method that is no verb is the 405 naming the resource,
// with kube's details, as a status or scale subresource's 405 for a verb
// it does not take; without a namespace, a namespaced resource is listed
// only (another verb has no route). A POST on an object is admitted under
// the path's name, as kube's create handler names admission's attributes. TestKubeCustomResourceMethodsSameAsOurs
// compares them with kube-apiserver.
func TestCustomResourceMethods(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, scaleCRD())
	gadgets := scaleCRD()
	gadgets["metadata"] = map[string]any{"name": "gadgets.example.com"}
	spec := gadgets["spec"].(map[string]any)
	spec["scope"] = "Cluster"
	spec["names"] = map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
	e.must(201, "POST", crdPath, gadgets)
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	for _, c := range []struct{ col, plural string }{{widgets, "widgets"}, {"/apis/example.com/v1/gadgets", "gadgets"}} {
		e.expectStatus(http.StatusBadRequest, "BadRequest", "name must be provided", "PUT", c.col, "{}", "Accept", "text/bogus")
		e.expectStatus(http.StatusUnsupportedMediaType, "UnsupportedMediaType", "", "PATCH", c.col, "{}")
		e.expectStatus(http.StatusBadRequest, "BadRequest", "name must be provided", "PATCH", c.col, "{}",
			"Content-Type", "application/merge-patch+json")
		msg := func(verb string) string {
			return verb + ` is not supported on resources of kind "` + c.plural + `.example.com"`
		}
		var checks []map[string]any
		for _, method := range []string{"OPTIONS", "TRACE", "FOO"} {
			for _, p := range []string{c.col, c.col + "/x", c.col + "/x/status", c.col + "/x/scale"} {
				checks = append(checks, e.expectStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", msg(""), method, p, "{}"))
			}
		}
		for _, sub := range []string{"/status", "/scale"} {
			checks = append(checks, e.expectStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", msg("create"), "POST", c.col+"/x"+sub, "{}"),
				e.expectStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", msg("delete"), "DELETE", c.col+"/x"+sub, nil))
		}
		for _, m := range checks {
			if d, _ := m["details"].(map[string]any); d["group"] != "example.com" || d["kind"] != c.plural || len(d) != 2 {
				t.Errorf("405 details %v, want kube's group and resource", m["details"])
			}
		}
	}
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		e.expectNoRoute(method, "/apis/example.com/v1/widgets")
		e.expectNoRoute(method, "/apis/example.com/v1/widgets/x")
	}
	e.must(200, "GET", "/apis/example.com/v1/widgets", nil)
	e.must(201, "POST", widgets+"/x", widget("made-by-post", "v1"))
	e.must(200, "GET", widgets+"/made-by-post", nil)
	e.expectStatus(http.StatusNotFound, "NotFound", "", "GET", widgets+"/x", nil)
	// Admitted under the path's name: NamespaceLifecycle's refusal names it.
	e.must(201, "POST", "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ending"}})
	e.must(201, "POST", "/api/v1/namespaces/ending/configmaps", map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "held", "finalizers": []any{"example.com/hold"}}})
	e.must(200, "DELETE", "/api/v1/namespaces/ending", nil)
	e.expectStatus(http.StatusForbidden, "Forbidden",
		`widgets.example.com "x" is forbidden: unable to create new content in namespace ending because it is being terminated`,
		"POST", "/apis/example.com/v1/namespaces/ending/widgets/x", widget("y", "v1"))
}
