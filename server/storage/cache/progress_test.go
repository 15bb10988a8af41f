package cache

import (
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcd"
)

// TestConsistentReadAfterOtherResourceWrites: writes to another resource
// move etcd's revision past the cache's without an event for it. A
// consistent LIST must then wait for a progress notification, which it
// gets by asking (etcd's periodic one is an hour away here), and be
// served by the cache, not counted as a fallback.
func TestConsistentReadAfterOtherResourceWrites(t *testing.T) {
	ctx := testCtx(t)
	emb, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: t.TempDir(), ProgressNotifyInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	store := etcd.New(emb.Client())
	c := startCache(t, store, Config{FreshnessTimeout: 10 * time.Second})
	mine := mustCreate(t, store, "ns", "a", nil)
	for i := range 3 {
		var other int64
		if other, err = store.Create(ctx, "/registry/secrets/ns/s"+string(rune('a'+i)), value("ns", "s", nil, "x")); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		page, err := c.GetList(ctx, testPrefix, storage.GetListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waited := time.Since(began)
		if page.Revision < other || len(page.Items) != 1 || page.Items[0].Revision != mine {
			t.Fatalf("consistent read at %d with %d items, want >= %d with a at %d", page.Revision, len(page.Items), other, mine)
		}
		// The request is answered on the stream's next turn; 2 s is far
		// beyond that and far below the 10 s fallback.
		if waited > 2*time.Second {
			t.Errorf("consistent read waited %v", waited)
		}
	}
	if n := counterValue(t, c.m.fallbacks); n != 0 {
		t.Fatalf("fallbacks = %v, want 0", n)
	}
}

// TestConsistentReadWithIdleNewCache: a cache that has just listed at
// etcd's current revision watches from the next one, a revision etcd has
// not reached; etcd (3.6+) answers no progress request on a gRPC watch
// stream holding such a watch. A consistent LIST of another cache, which
// must learn etcd's revision from a progress notification, must not be
// held up by it (as at server start, where each resource's cache starts
// on its first read while the bootstrap writes go on).
func TestConsistentReadWithIdleNewCache(t *testing.T) {
	ctx := testCtx(t)
	emb, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: t.TempDir(), ProgressNotifyInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	store := etcd.New(emb.Client())
	c := startCache(t, store, Config{FreshnessTimeout: 10 * time.Second})
	other, err := store.Create(ctx, "/registry/secrets/ns/s", value("ns", "s", nil, "x"))
	if err != nil {
		t.Fatal(err)
	}
	// Listed at other, its watch starts at other+1.
	startCache(t, store, Config{Prefix: "/registry/pods/"})
	page, err := c.GetList(ctx, testPrefix, storage.GetListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Revision < other {
		t.Fatalf("consistent read at %d, want >= %d", page.Revision, other)
	}
	if n := counterValue(t, c.m.fallbacks); n != 0 {
		t.Fatalf("fallbacks = %v, want 0: the read waited out its 10 s", n)
	}
}
