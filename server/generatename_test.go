package server

import (
	"sync"
	"testing"
)

// TestGenerateNameRetriesAsKube: a create from generateName whose drawn
// name exists is tried again with a new name, as kube's store does, up
// to eight names; when all exist, and when a create names an object
// that exists beside a generateName, the 409 AlreadyExists says the
// server could not generate a unique name (kube's
// CheckGeneratedNameError) and asks to retry after a second.
func TestGenerateNameRetriesAsKube(t *testing.T) {
	var mu sync.Mutex
	var drawn []string
	next := []string{"taken", "taken", "free"}
	e := newEnv(t, func(c *Config) {
		c.generateName = func(base string) string {
			mu.Lock()
			defer mu.Unlock()
			name := "taken"
			if len(next) > 0 {
				name, next = next[0], next[1:]
			}
			drawn = append(drawn, base+name)
			return base + name
		}
	})
	e.must(201, "POST", cmPath, map[string]any{"metadata": map[string]any{"name": "g-taken"}})

	m := e.must(201, "POST", cmPath, map[string]any{"metadata": map[string]any{"generateName": "g-"}})
	if path(m, "metadata", "name") != "g-free" || len(drawn) != 3 {
		t.Fatalf("created %v after drawing %v, want g-free on the third name", path(m, "metadata", "name"), drawn)
	}

	// Every name drawn exists: eight tries, then kube's 409.
	drawn = nil
	r := e.do("POST", cmPath, map[string]any{"metadata": map[string]any{"generateName": "g-"}})
	st := r.json(t)
	const msg = `configmaps "g-taken" already exists, the server was not able to generate a unique name for the object`
	if r.code != 409 || st["reason"] != "AlreadyExists" || st["message"] != msg ||
		path(st, "details", "retryAfterSeconds") != float64(1) || r.hdr.Get("Retry-After") != "1" || len(drawn) != 8 {
		t.Fatalf("all names taken: %d %v (Retry-After %q) after drawing %d names", r.code, st, r.hdr.Get("Retry-After"), len(drawn))
	}

	// A name of its own beside a generateName: no retry, the same words.
	drawn = nil
	r = e.do("POST", cmPath, map[string]any{"metadata": map[string]any{"name": "g-taken", "generateName": "g-"}})
	if st := r.json(t); r.code != 409 || st["message"] != msg || len(drawn) != 0 {
		t.Fatalf("own name beside generateName: %d %v, %d names drawn", r.code, st, len(drawn))
	}
	// Without a generateName, kube's plain AlreadyExists.
	r = e.do("POST", cmPath, map[string]any{"metadata": map[string]any{"name": "g-taken"}})
	if st := r.json(t); r.code != 409 || st["message"] != `configmaps "g-taken" already exists` || r.hdr.Get("Retry-After") != "" {
		t.Fatalf("own name: %d %v", r.code, st)
	}
}
