package server

import (
	"testing"
)

// TestNoopWritesNotStored: an update, patch or status write that stores
// the same bytes keeps the resourceVersion and makes no watch event. The
// absence is proven without waiting: the event after the no-ops is the
// real write that follows them.
func TestNoopWritesNotStored(t *testing.T) {
	e := newEnv(t)
	created := e.must(201, "POST", cmPath, cm("n", map[string]string{"a": "1"}, map[string]string{"k": "v"}))
	rv := path(created, "metadata", "resourceVersion").(string)
	w := e.watch(cmPath + "?watch=1&resourceVersion=" + rv)

	same := func(what string, got map[string]any) {
		t.Helper()
		if path(got, "metadata", "resourceVersion") != rv || path(got, "data", "k") != "v" {
			t.Fatalf("%s: resourceVersion %v, want %s: %v", what, path(got, "metadata", "resourceVersion"), rv, got)
		}
	}
	same("PUT of the object as read", e.must(200, "PUT", cmPath+"/n", created))
	same("PUT without resourceVersion", e.must(200, "PUT", cmPath+"/n", cm("n", map[string]string{"a": "1"}, map[string]string{"k": "v"})))
	same("merge patch, same label", e.must(200, "PATCH", cmPath+"/n", `{"metadata":{"labels":{"a":"1"}}}`, "Content-Type", mergePatch))
	same("empty merge patch", e.must(200, "PATCH", cmPath+"/n", `{}`, "Content-Type", mergePatch))
	same("json patch, same value", e.must(200, "PATCH", cmPath+"/n", `[{"op":"replace","path":"/data/k","value":"v"}]`, "Content-Type", "application/json-patch+json"))
	same("strategic patch, same value", e.must(200, "PATCH", cmPath+"/n", `{"data":{"k":"v"}}`, "Content-Type", "application/strategic-merge-patch+json"))
	// A stale resourceVersion is still a conflict, no-op or not.
	stale := cm("n", map[string]string{"a": "1"}, map[string]string{"k": "v"})
	stale["metadata"].(map[string]any)["resourceVersion"] = "1"
	e.expectStatus(409, "Conflict", "", "PUT", cmPath+"/n", stale)

	changed := e.must(200, "PATCH", cmPath+"/n", `{"data":{"k":"v2"}}`, "Content-Type", mergePatch)
	if path(changed, "metadata", "resourceVersion") == rv {
		t.Fatalf("a real change kept the resourceVersion: %v", changed)
	}
	if ev := w.expect("MODIFIED", "n"); path(ev.Object, "data", "k") != "v2" {
		t.Fatalf("first event after the no-ops: %v", ev.Object)
	}

	// The status subresource too.
	p := e.must(201, "POST", podPath, podObj("s", "", map[string]any{"status": map[string]any{"phase": "Pending"}}))
	prv := path(p, "metadata", "resourceVersion")
	st := e.must(200, "PATCH", podPath+"/s/status", `{"status":{"phase":"Pending"}}`, "Content-Type", mergePatch)
	if path(st, "metadata", "resourceVersion") != prv {
		t.Fatalf("status no-op: %v", st)
	}
}
