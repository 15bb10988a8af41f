package server

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

// TestAwaitWriteHook: Config.AwaitWrite hears of each committed write of
// one object before its answer (create, update, patch, apply, a delete
// that marks, an update that removes the last finalizer, a delete), at
// the revision the answer carries, and of nothing else: no dry run, no
// failed write, no no-op, no deletecollection.
func TestAwaitWriteHook(t *testing.T) {
	var (
		mu     sync.Mutex
		writes []CommittedWrite
	)
	e := newEnv(t, func(c *Config) {
		c.AwaitWrite = func(_ context.Context, w CommittedWrite) {
			mu.Lock()
			defer mu.Unlock()
			writes = append(writes, w)
		}
	})
	// ConfigMaps: the hook hears of every resource's writes (RBAC's
	// would need a user for their escalation checks).
	const cms = "/api/v1/namespaces/default/configmaps"
	cm := func(name, verb, meta string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"` + meta + `},"data":{"a":"` + verb + `"}}`
	}
	// heard checks what the hook heard of since the last check: one
	// write of name at the resourceVersion of m (rv 0: any), or none
	// (name "").
	heard := func(what, name string, m map[string]any, gone bool) int64 {
		t.Helper()
		mu.Lock()
		got := writes
		writes = nil
		mu.Unlock()
		if name == "" {
			if len(got) != 0 {
				t.Errorf("%s: AwaitWrite heard %+v, want nothing", what, got)
			}
			return 0
		}
		if len(got) != 1 {
			t.Fatalf("%s: AwaitWrite heard %+v, want one write", what, got)
		}
		w := got[0]
		want := CommittedWrite{Group: "", Resource: "configmaps", Namespace: "default", Name: name, ResourceVersion: w.ResourceVersion, Gone: gone}
		if m != nil {
			rv, _ := strconv.ParseInt(path(m, "metadata", "resourceVersion").(string), 10, 64)
			want.ResourceVersion = rv
		}
		if w != want || w.ResourceVersion == 0 {
			t.Errorf("%s: AwaitWrite heard %+v, want %+v", what, w, want)
		}
		return w.ResourceVersion
	}
	const mergeCT, applyCT = "application/merge-patch+json", "application/apply-patch+yaml"

	heard("create", "r", e.must(201, "POST", cms, cm("r", "get", "")), false)
	e.must(201, "POST", cms+"?dryRun=All", cm("dry", "get", ""))
	heard("dry-run create", "", nil, false)
	e.must(409, "POST", cms, cm("r", "get", ""))
	heard("failed create", "", nil, false)
	heard("update", "r", e.must(200, "PUT", cms+"/r", cm("r", "list", "")), false)
	e.must(200, "PUT", cms+"/r", cm("r", "list", ""))
	heard("no-op update", "", nil, false)
	e.must(200, "PATCH", cms+"/r?dryRun=All", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", mergeCT)
	heard("dry-run patch", "", nil, false)
	heard("patch", "r", e.must(200, "PATCH", cms+"/r", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", mergeCT), false)
	heard("apply", "r", e.must(200, "PATCH", cms+"/r?fieldManager=me&force=true", cm("r", "watch", ""), "Content-Type", applyCT), false)
	heard("apply that creates", "ap", e.must(201, "PATCH", cms+"/ap?fieldManager=me", cm("ap", "get", ""), "Content-Type", applyCT), false)
	heard("another create", "up", e.must(201, "POST", cms, cm("up", "get", "")), false)

	// A finalizer holds the delete: the delete marks (an update), the
	// update that removes the finalizer deletes.
	marked := e.must(200, "PATCH", cms+"/r", `{"metadata":{"finalizers":["example.com/hold"]}}`, "Content-Type", mergeCT)
	heard("finalizer added", "r", marked, false)
	e.must(200, "DELETE", cms+"/r?dryRun=All", nil)
	heard("dry-run delete", "", nil, false)
	rev := heard("delete that marks", "r", e.must(200, "DELETE", cms+"/r", nil), false)
	e.must(200, "PATCH", cms+"/r", `{"metadata":{"finalizers":null}}`, "Content-Type", mergeCT)
	if got := heard("finalizer removed", "r", nil, true); got != rev {
		t.Errorf("finalizer removed: AwaitWrite heard revision %d, want %d (the object deleted)", got, rev)
	}
	e.must(200, "DELETE", cms+"/ap", nil)
	if got := heard("delete", "ap", nil, true); got <= rev {
		t.Errorf("delete: AwaitWrite heard revision %d, want one after %d", got, rev)
	}
	e.must(404, "DELETE", cms+"/nope", nil)
	heard("failed delete", "", nil, false)
	e.must(200, "DELETE", cms, nil) // deletecollection: "up"
	heard("deletecollection", "", nil, false)
	e.must(404, "GET", cms+"/up", nil)
}
