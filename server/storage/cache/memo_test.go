package cache

import (
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// TestAltEncodingShared: the other encoding of an object (the server's
// protobuf) is memoized per entry and per frame, so list pages, initial
// events and every watcher of one event share one build.
func TestAltEncodingShared(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{})
	w1 := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{SendInitialEvents: ptr(false)})
	w2 := openWatch(t, c.Cache, testPrefix+"ns/", storage.WatchOptions{SendInitialEvents: ptr(false)})
	mustCreate(t, e.Store, "ns", "a", nil)
	a, b := nextN(t, w1, 1)[0], nextN(t, w2, 1)[0]
	if a.FrameAlt == nil || a.FrameAlt != b.FrameAlt || a.ObjectAlt == nil || a.ObjectAlt != b.ObjectAlt {
		t.Fatalf("memos not shared: %p %p, %p %p", a.FrameAlt, b.FrameAlt, a.ObjectAlt, b.ObjectAlt)
	}
	builds := 0
	build := func() ([]byte, error) { builds++; return []byte("pb"), nil }
	for range 2 {
		if got, _ := a.ObjectAlt.Get(build); string(got) != "pb" {
			t.Fatalf("memo %q", got)
		}
		_, _ = b.ObjectAlt.Get(build)
	}
	waitRev(t, c.Cache, e.Store)
	page, err := c.GetList(testCtx(t), testPrefix, storage.GetListOptions{})
	if err != nil || len(page.Items) != 1 || page.Items[0].Alt != a.ObjectAlt {
		t.Fatalf("list item memo %v %+v, want the event's", err, page.Items)
	}
	_, _ = page.Items[0].Alt.Get(build)
	init := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{SendInitialEvents: ptr(true)})
	if ev := nextN(t, init, 1)[0]; ev.ObjectAlt != a.ObjectAlt {
		t.Fatal("initial event memo is not the entry's")
	}
	if builds != 1 {
		t.Fatalf("built %d times", builds)
	}
	// A delete's object is the last value at the delete's revision: a
	// memo of its own, shared by the watchers.
	mustDelete(t, e.Store, "ns", "a")
	a, b = nextN(t, w1, 1)[0], nextN(t, w2, 1)[0]
	if a.ObjectAlt == nil || a.ObjectAlt != b.ObjectAlt || a.ObjectAlt == page.Items[0].Alt || a.FrameAlt != b.FrameAlt {
		t.Fatal("delete memos")
	}
}
