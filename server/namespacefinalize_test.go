package server

import (
	"fmt"
	"testing"
)

// TestNamespaceFinalize: the kubernetes spec finalizer is set on create
// and kept by every write but /finalize; /finalize validates names and
// never changes status; a terminating namespace goes with its last
// finalizer, spec or metadata, whichever write removes it.
func TestNamespaceFinalize(t *testing.T) {
	e := newEnv(t)
	fins := func(obj map[string]any) string {
		f := path(obj, "spec", "finalizers")
		if f == nil {
			return "[]" // kube omits an empty list
		}
		return fmt.Sprint(f)
	}
	ns := func(name string, spec map[string]any, metaFins ...string) map[string]any {
		m := map[string]any{"name": name}
		if len(metaFins) > 0 {
			m["finalizers"] = metaFins
		}
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": m, "spec": spec}
	}
	if got := e.must(201, "POST", "/api/v1/namespaces", ns("fin", nil)); fins(got) != "[kubernetes]" {
		t.Fatalf("create: %v", got)
	}
	if got := e.must(201, "POST", "/api/v1/namespaces", ns("fin2", map[string]any{"finalizers": []string{"example.com/x"}})); fins(got) != "[example.com/x kubernetes]" {
		t.Fatalf("create with a finalizer: %v", got)
	}
	// The main resource keeps the stored spec.finalizers.
	if got := e.must(200, "PUT", "/api/v1/namespaces/fin", ns("fin", map[string]any{"finalizers": []string{}})); fins(got) != "[kubernetes]" {
		t.Fatalf("update changed spec.finalizers: %v", got)
	}
	e.expectStatus(422, "Invalid",
		`Namespace "fin" is invalid: spec.finalizers[0]: Invalid value: "bogus": name is neither a standard finalizer name nor is it fully qualified`,
		"PUT", "/api/v1/namespaces/fin/finalize", ns("fin", map[string]any{"finalizers": []string{"bogus"}}))
	e.expectStatus(405, "MethodNotAllowed", "", "GET", "/api/v1/namespaces/fin/finalize", nil)
	e.expectStatus(404, "NotFound", "", "PUT", "/api/v1/namespaces/fin/bogus", ns("fin", nil))

	// An active namespace may be finalized: nothing goes.
	body := ns("fin", map[string]any{"finalizers": []string{}})
	body["status"] = map[string]any{"phase": "Terminating"}
	got := e.must(200, "PUT", "/api/v1/namespaces/fin/finalize", body)
	if fins(got) != "[]" || path(got, "status", "phase") != "Active" {
		t.Fatalf("finalize of an active namespace: %v", got)
	}
	// The last finalizer of a terminating namespace removes it.
	e.must(200, "DELETE", "/api/v1/namespaces/fin2", nil)
	if got := e.must(200, "PUT", "/api/v1/namespaces/fin2/finalize", ns("fin2", map[string]any{"finalizers": []string{"example.com/x"}})); path(got, "status", "phase") != "Terminating" {
		t.Fatalf("partial finalize: %v", got)
	}
	e.must(200, "GET", "/api/v1/namespaces/fin2", nil)
	got = e.must(200, "PUT", "/api/v1/namespaces/fin2/finalize", ns("fin2", map[string]any{"finalizers": []string{}}))
	if got["kind"] != "Namespace" || path(got, "metadata", "name") != "fin2" {
		t.Fatalf("last finalize answered %v", got)
	}
	e.expectStatus(404, "NotFound", `namespaces "fin2" not found`, "GET", "/api/v1/namespaces/fin2", nil)

	// metadata.finalizers hold it too, until a write removes the last.
	e.must(201, "POST", "/api/v1/namespaces", ns("fin3", nil, "example.com/m"))
	e.must(200, "DELETE", "/api/v1/namespaces/fin3", nil)
	e.must(200, "PUT", "/api/v1/namespaces/fin3/finalize", ns("fin3", map[string]any{"finalizers": []string{}}, "example.com/m"))
	if got := e.must(200, "DELETE", "/api/v1/namespaces/fin3", nil); path(got, "status", "phase") != "Terminating" {
		t.Fatalf("delete with a metadata finalizer left: %v", got)
	}
	e.must(200, "PUT", "/api/v1/namespaces/fin3", ns("fin3", nil))
	e.expectStatus(404, "NotFound", `namespaces "fin3" not found`, "GET", "/api/v1/namespaces/fin3", nil)

	// With both emptied by /finalize before the DELETE, the DELETE
	// marks it and a second one removes it.
	e.must(200, "DELETE", "/api/v1/namespaces/fin", nil)
	e.must(200, "GET", "/api/v1/namespaces/fin", nil)
	e.must(200, "DELETE", "/api/v1/namespaces/fin", nil)
	e.expectStatus(404, "NotFound", "", "GET", "/api/v1/namespaces/fin", nil)
}
