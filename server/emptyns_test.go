package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// TestEmptyNamespacePaths: a path whose namespace segment is empty
// (/api/v1/namespaces//configmaps) is routed as kube-apiserver's router
// takes it, with namespace "": a GET of the collection lists and watches
// across namespaces; a create is validation's 422 (the object has no
// namespace); a read or write of an object, one of its subresources or a
// deletecollection of a non-empty list is the store's 400 "Namespace
// parameter required."; methods the path does not take are the router's
// 405; a cluster-scoped built-in there, another empty segment, and a
// custom resource but for its list are 404s; the namespace's own status
// with an empty name is its handler's 400. Nothing is written
// (e2e.TestKubeEmptyNamespaceSameAsOurs compares them with kube).
func TestEmptyNamespacePaths(t *testing.T) {
	e := newEnv(t)
	for _, ns := range []string{"team-a", "team-b"} {
		e.must(201, "POST", "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": ns}})
	}
	e.must(201, "POST", "/api/v1/namespaces/team-a/configmaps", cm("x", map[string]string{"l": "v"}, map[string]string{"a": "b"}))
	e.must(201, "POST", "/api/v1/namespaces/team-b/configmaps", cm("y", map[string]string{"l": "v"}, nil))
	e.must(201, "POST", crdPath, crdDef("widgets", "Widget", "Namespaced"))
	e.must(201, "POST", "/apis/example.com/v1/namespaces/team-a/widgets",
		map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}})
	names := func(m map[string]any) []string {
		var out []string
		items, _ := m["items"].([]any)
		for _, it := range items {
			md := it.(map[string]any)["metadata"].(map[string]any)
			out = append(out, md["namespace"].(string)+"/"+md["name"].(string))
		}
		return out
	}
	before := names(e.must(200, "GET", "/api/v1/configmaps?labelSelector=l", nil))

	// Lists across namespaces.
	for p, want := range map[string][]string{
		"/api/v1/namespaces//configmaps?labelSelector=l":                                           {"team-a/x", "team-b/y"},
		"/api/v1/namespaces//configmaps/?labelSelector=l":                                          {"team-a/x", "team-b/y"},
		"/api/v1/namespaces//configmaps?fieldSelector=metadata.name%3Dx":                           {"team-a/x"},
		"/apis/example.com/v1/namespaces//widgets":                                                 {"team-a/w"},
		"/api/v1/namespaces//configmaps?labelSelector=l&fieldSelector=metadata.namespace%3Dteam-b": {"team-b/y"},
	} {
		if got := names(e.must(200, "GET", p, nil)); !slices.Equal(got, want) {
			t.Errorf("GET %s: %v, want %v", p, got, want)
		}
	}
	// Watches across namespaces, on both forms of the path.
	for _, p := range []string{"/api/v1/namespaces//configmaps?watch=1&", "/api/v1/watch/namespaces//configmaps?"} {
		r := e.do("GET", p+"labelSelector=l&timeoutSeconds=1", nil)
		var got []string
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		for sc.Scan() {
			var ev struct {
				Type   string
				Object struct {
					Metadata struct{ Namespace, Name string }
				}
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("GET %s: %d %s", p, r.code, r.body)
			}
			got = append(got, ev.Type+" "+ev.Object.Metadata.Namespace+"/"+ev.Object.Metadata.Name)
		}
		if want := []string{"ADDED team-a/x", "ADDED team-b/y"}; r.code != 200 || !slices.Equal(got, want) {
			t.Errorf("GET %s: %d %v, want %v", p, r.code, got, want)
		}
	}

	const npr, notAllowed = "Namespace parameter required.", "the server does not allow this method on the requested resource"
	merge := []string{"Content-Type", "application/merge-patch+json"}
	cmX := cm("x", nil, map[string]string{"a": "changed"})
	// An object naming a namespace: kube clears it for a request without one.
	cmIn := cm("x", nil, map[string]string{"a": "changed"})
	cmIn["metadata"].(map[string]any)["namespace"] = "team-a"
	for _, c := range []struct {
		code            int
		reason, message string
		method, path    string
		body            any
		hdr             []string
	}{
		{422, "Invalid", `ConfigMap "x" is invalid: metadata.namespace: Required value`, "POST", "/api/v1/namespaces//configmaps", cmX, nil},
		{422, "Invalid", `ConfigMap "x" is invalid: metadata.namespace: Required value`, "POST", "/api/v1/namespaces//configmaps", cmIn, nil},
		{400, "BadRequest", npr, "PUT", "/api/v1/namespaces//configmaps/x", cmIn, nil},
		{405, "MethodNotAllowed", notAllowed, "PUT", "/api/v1/namespaces//configmaps", cmX, nil},
		{405, "MethodNotAllowed", notAllowed, "PATCH", "/api/v1/namespaces//configmaps", "{}", merge},
		{400, "BadRequest", npr, "DELETE", "/api/v1/namespaces//configmaps?labelSelector=l", nil, nil},
		{400, "BadRequest", npr, "GET", "/api/v1/namespaces//configmaps/x", nil, nil},
		{400, "BadRequest", npr, "PUT", "/api/v1/namespaces//configmaps/x", cmX, nil},
		{400, "BadRequest", "the name of the object (x based on URL) was undeterminable: name must be provided", "PUT", "/api/v1/namespaces//configmaps/x", "{}", nil},
		{400, "BadRequest", npr, "PATCH", "/api/v1/namespaces//configmaps/x", `{"data":{"a":"changed"}}`, merge},
		{400, "BadRequest", npr, "DELETE", "/api/v1/namespaces//configmaps/x", nil, nil},
		{405, "MethodNotAllowed", notAllowed, "POST", "/api/v1/namespaces//configmaps/x", cmX, nil},
		{405, "MethodNotAllowed", notAllowed, "POST", "/api/v1/watch/namespaces//configmaps", nil, nil},
		{400, "BadRequest", npr, "GET", "/api/v1/namespaces//pods/x/status", nil, nil},
		{400, "BadRequest", npr, "GET", "/api/v1/namespaces//pods/x/log", nil, nil},
		{400, "BadRequest", npr, "POST", "/api/v1/namespaces//pods/x/eviction",
			map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": "x"}}, nil},
		{400, "BadRequest", npr, "POST", "/api/v1/namespaces//pods/x/binding",
			map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": "x"}, "target": map[string]any{"kind": "Node", "name": "n"}}, nil},
		{400, "BadRequest", npr, "POST", "/api/v1/namespaces//bindings",
			map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": "x"}, "target": map[string]any{"kind": "Node", "name": "n"}}, nil},
		{400, "BadRequest", npr, "GET", "/apis/apps/v1/namespaces//deployments/x/scale", nil, nil},
		{404, "NotFound", "the server could not find the requested resource", "GET", "/api/v1/namespaces//nodes", nil, nil},
		{404, "NotFound", "the server could not find the requested resource", "GET", "/api/v1/namespaces//namespaces", nil, nil},
		{404, "NotFound", "the server could not find the requested resource", "GET", "/api/v1/namespaces///configmaps", nil, nil},
		{404, "NotFound", "the server could not find the requested resource", "GET", "/api/v1/namespaces//configmaps//x", nil, nil},
		{400, "BadRequest", "name must be provided", "GET", "/api/v1/namespaces//status", nil, nil},
		{400, "BadRequest", "name must be provided", "PUT", "/api/v1/namespaces//finalize", "{}", nil},
		{405, "MethodNotAllowed", notAllowed, "GET", "/api/v1/namespaces//finalize", nil, nil},
	} {
		e.expectStatus(c.code, c.reason, c.message, c.method, c.path, c.body, c.hdr...)
	}
	// A deletecollection that lists nothing deletes nothing: an empty list.
	if got := names(e.must(200, "DELETE", "/api/v1/namespaces//configmaps?labelSelector=none", nil)); len(got) != 0 {
		t.Errorf("deletecollection of nothing: %v", got)
	}
	// A custom resource's CRD handler takes only a list or watch there.
	e.expectNoRoute("GET", "/apis/example.com/v1/namespaces//widgets/w")
	e.expectNoRoute("POST", "/apis/example.com/v1/namespaces//widgets")

	after := names(e.must(200, "GET", "/api/v1/configmaps?labelSelector=l", nil))
	x := e.must(200, "GET", "/api/v1/namespaces/team-a/configmaps/x", nil)
	if !slices.Equal(before, after) || path(x, "data", "a") != "b" {
		t.Errorf("configmaps changed: %v, then %v; x %v", before, after, x)
	}
}
