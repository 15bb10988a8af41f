package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// laggingReaders give every resource the direct reader plus a Peek that
// answers from copies the test takes and keeps: a watch cache lagging
// storage by as long as the test likes (fault injection).
type laggingReaders struct {
	r      *direct.Reader
	mu     sync.Mutex
	copies map[string]storage.KV
}

func (l *laggingReaders) Open(ReaderSpec) ResourceReader { return laggingReader{l.r, l} }

// keep makes the reader hold key as storage has it now.
func (l *laggingReaders) keep(t *testing.T, store storage.Interface, key string) {
	t.Helper()
	kv, err := store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.copies[key] = kv
}

type laggingReader struct {
	storage.ListWatcher
	l *laggingReaders
}

func (laggingReader) Close() {}

func (r laggingReader) Peek(key string) (storage.KV, bool) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	kv, ok := r.l.copies[key]
	return kv, ok
}

// TestUpdateFromLaggingCache: update and patch start from the watch
// cache's copy of the object (kube's GuaranteedUpdate does), and every
// answer that is not a successful conditional write rests on storage, so
// a cache that lags changes nothing a client sees.
func TestUpdateFromLaggingCache(t *testing.T) {
	et := etcdtest.Start(t)
	readers := &laggingReaders{r: direct.New(et.Store), copies: map[string]storage.KV{}}
	e := startEnv(t, et.Store, et, func(c *Config) { c.Readers = readers })
	const coll = "/api/v1/namespaces/default/configmaps"
	const key = "/registry/configmaps/default/a"
	e.must(201, "POST", coll, cm("a", nil, map[string]string{"x": "1"}))
	readers.keep(t, e.store, key) // the cache holds x=1 from now on
	cur := e.must(200, "PUT", coll+"/a", cm("a", nil, map[string]string{"x": "2"}))
	rv := path(cur, "metadata", "resourceVersion").(string)

	// A merge patch starts from storage's x=2, not the cache's x=1.
	got := e.must(200, "PATCH", coll+"/a", `{"data":{"y":"3"}}`, "Content-Type", "application/merge-patch+json")
	if d := got["data"].(map[string]any); d["x"] != "2" || d["y"] != "3" {
		t.Fatalf("patch from a lagging cache: data %v, want x=2 y=3", d)
	}
	rv = path(got, "metadata", "resourceVersion").(string)

	// The client's resourceVersion is storage's, which the cache has not
	// seen: no 409.
	body := cm("a", nil, map[string]string{"x": "4"})
	body["metadata"].(map[string]any)["resourceVersion"] = rv
	got = e.must(200, "PUT", coll+"/a", body)
	rv = path(got, "metadata", "resourceVersion").(string)

	// What the cache holds is no longer what storage holds: writing it
	// back is a change, not a no-op answered from the cache.
	got = e.must(200, "PUT", coll+"/a", cm("a", nil, map[string]string{"x": "1"}))
	if got["data"].(map[string]any)["x"] != "1" || path(got, "metadata", "resourceVersion") == rv {
		t.Fatalf("write of the cache's content: %v, want x=1 at a new resourceVersion than %s", got["data"], rv)
	}
	if stored := e.must(200, "GET", coll+"/a", nil); stored["data"].(map[string]any)["x"] != "1" {
		t.Fatalf("stored data %v after writing x=1", stored["data"])
	}
	rv = path(got, "metadata", "resourceVersion").(string)

	// A dry run answers at storage's resourceVersion.
	readers.keep(t, e.store, key)
	e.must(200, "PUT", coll+"/a", cm("a", nil, map[string]string{"x": "5"}))
	now := e.must(200, "GET", coll+"/a", nil)
	dry := e.must(200, "PUT", coll+"/a?dryRun=All", cm("a", nil, map[string]string{"x": "6"}))
	if path(dry, "metadata", "resourceVersion") != path(now, "metadata", "resourceVersion") {
		t.Fatalf("dry run at resourceVersion %v, storage has %v", path(dry, "metadata", "resourceVersion"), path(now, "metadata", "resourceVersion"))
	}

	// A stale precondition is still the client's 409.
	body = cm("a", nil, map[string]string{"x": "7"})
	body["metadata"].(map[string]any)["resourceVersion"] = rv
	e.expectStatus(409, "Conflict", "", "PUT", coll+"/a", body)

	// Deleted from storage, still in the cache: 404.
	e.must(200, "DELETE", coll+"/a", nil)
	e.expectStatus(404, "NotFound", `configmaps "a" not found`, "PUT", coll+"/a", cm("a", nil, map[string]string{"x": "8"}))
}

// TestNamespaceCheckFromLaggingCache: creates check their namespace in
// the watch cache's copy, but a namespace the cache does not hold is read
// from storage, and one this server began deleting is read from storage
// even while the cache still holds it active (kube's forceLiveLookup).
func TestNamespaceCheckFromLaggingCache(t *testing.T) {
	et := etcdtest.Start(t)
	readers := &laggingReaders{r: direct.New(et.Store), copies: map[string]storage.KV{}}
	e := startEnv(t, et.Store, et, func(c *Config) { c.Readers = readers })
	e.must(201, "POST", "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "t1"}})
	e.must(201, "POST", "/api/v1/namespaces/t1/configmaps", cm("before", nil, nil)) // not in the cache: from storage
	readers.keep(t, e.store, "/registry/namespaces/t1")                             // the cache holds t1 active from now on
	e.must(200, "DELETE", "/api/v1/namespaces/t1", nil)
	e.expectStatus(403, "Forbidden", `configmaps "after" is forbidden: unable to create new content in namespace t1 because it is being terminated`,
		"POST", "/api/v1/namespaces/t1/configmaps", cm("after", nil, nil))
	e.expectStatus(404, "NotFound", `namespaces "ghost" not found`, "POST", "/api/v1/namespaces/ghost/configmaps", cm("x", nil, nil))
}

// TestUpdateRefusalFromCacheStands: an attempt from the watch cache's
// copy that fn refuses (a precondition, admission) stands when storage
// holds the same revision, as kube's GuaranteedUpdate: fn, and the
// webhooks it may call, run once. From a stale copy the refusal is
// retried from storage.
func TestUpdateRefusalFromCacheStands(t *testing.T) {
	et := etcdtest.Start(t)
	readers := &laggingReaders{r: direct.New(et.Store), copies: map[string]storage.KV{}}
	e := startEnv(t, et.Store, et, func(c *Config) { c.Readers = readers })
	const key = "/registry/configmaps/default/a"
	e.must(201, "POST", "/api/v1/namespaces/default/configmaps", cm("a", nil, map[string]string{"x": "1"}))
	res, ok := e.srv.reg.lookup("", "v1", "configmaps")
	if !ok {
		t.Fatal("no configmaps")
	}
	refuse := errors.New("refused")
	attempts := func() int {
		c := &call{s: e.srv, w: httptest.NewRecorder(), r: internalRequest(t.Context(), http.MethodPut), res: res, ns: "default", name: "a"}
		n := 0
		_, err := e.srv.guaranteedUpdate(t.Context(), c, 0, func(*doc) (*doc, error) {
			n++
			return nil, refuse
		})
		if !errors.Is(err, refuse) {
			t.Fatalf("guaranteedUpdate: %v, want fn's refusal", err)
		}
		return n
	}
	readers.keep(t, e.store, key) // current
	if n := attempts(); n != 1 {
		t.Errorf("from a current copy: fn ran %d times, want 1", n)
	}
	e.must(200, "PUT", "/api/v1/namespaces/default/configmaps/a", cm("a", nil, map[string]string{"x": "2"}))
	if n := attempts(); n != 2 { // the copy is stale now
		t.Errorf("from a stale copy: fn ran %d times, want 2", n)
	}
}
