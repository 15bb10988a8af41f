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
