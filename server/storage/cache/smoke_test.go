package cache

import (
	"context"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

func TestSmoke(t *testing.T) {
	e := etcdtest.Start(t)
	mustCreate(t, e.Store, "a", "x", nil)
	c := startCache(t, e.Store, Config{})
	mustCreate(t, e.Store, "a", "y", map[string]string{"k": "v"})
	items, rev, err := listAll(t, c, testPrefix, storage.GetListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameKVs(items, oracleList(t, e.Store, testPrefix, rev, storage.Predicate{})); err != nil {
		t.Fatal(err)
	}
}

// TestHeldValueBytes: a cache counts the bytes of the values its current
// state holds, from its list and through puts, updates and deletes, and
// takes them out of the process's count when it stops.
func TestHeldValueBytes(t *testing.T) {
	e := etcdtest.Start(t)
	mustCreate(t, e.Store, "a", "x", nil)
	mustCreate(t, e.Store, "a", "y", nil)
	before := HeldValueBytes()
	c := New(Config{Store: e.Store, Prefix: testPrefix})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if err := c.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		res, err := e.Store.List(testCtx(t), testPrefix, storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		for _, kv := range res.Items {
			want += int64(len(kv.Value))
		}
		c.mu.RLock()
		got := c.valueBytes
		c.mu.RUnlock()
		if got != want || HeldValueBytes()-before != want {
			t.Fatalf("%s: the cache holds %d bytes, the process %d more, want %d", when, got, HeldValueBytes()-before, want)
		}
	}
	check("listed")
	mustCreate(t, e.Store, "b", "z", map[string]string{"k": "v"})
	mustUpdate(t, e.Store, "a", "x", map[string]string{"a-longer-label": "and-a-longer-value"})
	mustDelete(t, e.Store, "a", "y")
	waitRev(t, c, e.Store)
	check("after a create, an update and a delete")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := HeldValueBytes() - before; n != 0 {
		t.Fatalf("a stopped cache still counts %d bytes", n)
	}
}
