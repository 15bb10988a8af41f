package server

import (
	"fmt"
	"net/http"
	"testing"
)

// TestPathNamesAsKube: a name in the path that cannot be a path segment
// ("." and "..", as sent or as %2E, or one with "%") is kube's store's
// 400 on a get, update, patch or delete of the object or of its status or
// scale, built-in or custom; after the handler's own refusals (a PUT's
// body without the name, a patch's type), as in kube.
func TestPathNamesAsKube(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, scaleCRD())
	// Each base with an object of its kind without a name.
	bases := map[string]string{
		"/api/v1/namespaces/default/configmaps/":           `{"apiVersion":"v1","kind":"ConfigMap"}`,
		"/api/v1/namespaces/":                              `{"apiVersion":"v1","kind":"Namespace"}`,
		"/api/v1/nodes/":                                   `{"apiVersion":"v1","kind":"Node"}`,
		"/apis/apps/v1/namespaces/default/deployments/":    `{"apiVersion":"apps/v1","kind":"Deployment"}`,
		"/apis/example.com/v1/namespaces/default/widgets/": `{"apiVersion":"example.com/v1","kind":"Widget"}`,
	}
	names := []struct{ sent, name, msg string }{
		{".", ".", "may not be '.'"}, {"%2E", ".", "may not be '.'"},
		{"..", "..", "may not be '..'"}, {"%2E%2E", "..", "may not be '..'"},
		{"a%25b", "a%b", "may not contain '%'"},
	}
	merge := []string{"Content-Type", "application/merge-patch+json"}
	for _, n := range names {
		msg := fmt.Sprintf("Name parameter invalid: %q: %s", n.name, n.msg)
		for base, unnamed := range bases {
			p := base + n.sent
			e.expectStatus(http.StatusBadRequest, "BadRequest", msg, "GET", p, nil)
			e.expectStatus(http.StatusBadRequest, "BadRequest", msg, "DELETE", p, nil)
			e.expectStatus(http.StatusBadRequest, "BadRequest", msg, "PATCH", p, "{}", merge...)
			// The body's name is checked against the path's first.
			e.expectStatus(http.StatusBadRequest, "BadRequest",
				fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", n.name), "PUT", p, unnamed)
		}
		for _, p := range []string{
			"/apis/apps/v1/namespaces/default/deployments/" + n.sent + "/status",
			"/apis/apps/v1/namespaces/default/deployments/" + n.sent + "/scale",
			"/apis/example.com/v1/namespaces/default/widgets/" + n.sent + "/status",
			"/apis/example.com/v1/namespaces/default/widgets/" + n.sent + "/scale",
			"/api/v1/nodes/" + n.sent + "/status",
		} {
			e.expectStatus(http.StatusBadRequest, "BadRequest", msg, "GET", p, nil)
			e.expectStatus(http.StatusBadRequest, "BadRequest", msg, "PATCH", p, "{}", merge...)
			// A patch's type is checked before the name.
			e.expectStatus(http.StatusUnsupportedMediaType, "UnsupportedMediaType", "", "PATCH", p, "{}")
		}
	}
	// Where an eviction, a binding or a proxy reads the object, as kube's
	// REST objects do through its store (exec and token requests are
	// compared with kube-apiserver by TestKubePathNamesSameAsOurs).
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/v1/namespaces/default/pods/a%25b/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a%b"}}`},
		{"POST", "/api/v1/namespaces/default/pods/a%25b/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"a%b"},"target":{"kind":"Node","name":"n"}}`},
		{"POST", "/api/v1/namespaces/default/bindings", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"a%b"},"target":{"kind":"Node","name":"n"}}`},
		{"GET", "/api/v1/nodes/a%25b/proxy", nil},
		{"GET", "/api/v1/namespaces/default/services/a%25b:80/proxy", nil},
	} {
		e.expectStatus(http.StatusBadRequest, "BadRequest", `Name parameter invalid: "a%b": may not contain '%'`, c.method, c.path, c.body)
	}
	// A PUT whose object has the path's name gets to the key.
	e.expectStatus(http.StatusBadRequest, "BadRequest", `Name parameter invalid: "a%b": may not contain '%'`,
		"PUT", "/api/v1/namespaces/default/configmaps/a%25b", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a%b"}}`)
	e.expectStatus(http.StatusBadRequest, "BadRequest", `Name parameter invalid: "a%b": may not contain '%'`,
		"PUT", "/apis/example.com/v1/namespaces/default/widgets/a%25b/scale",
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"a%b","namespace":"default"},"spec":{"replicas":1}}`)
}
