package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcd"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
	"github.com/listwatch/listwatch/wire"
)

func ptr[T any](v T) *T { return &v }

func openWatch(t testing.TB, c *Cache, prefix string, opts storage.WatchOptions) storage.EventStream {
	t.Helper()
	w, err := c.WatchList(context.Background(), prefix, opts)
	if err != nil {
		t.Fatalf("WatchList(%+v): %v", opts, err)
	}
	t.Cleanup(w.Close)
	return w
}

func TestWatchModes(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{})
	ra := mustCreate(t, e.Store, "ns1", "a", map[string]string{"app": "x"})
	rb := mustCreate(t, e.Store, "ns2", "b", nil)
	cur := waitRev(t, c.Cache, e.Store)

	state := []string{
		fmt.Sprintf("ADDED %sns1/a@%d[app]", testPrefix, ra),
		fmt.Sprintf("ADDED %sns2/b@%d[]", testPrefix, rb),
	}
	cases := []struct {
		name    string
		prefix  string
		opts    storage.WatchOptions
		initial []string
	}{
		{"rv=unset", testPrefix, storage.WatchOptions{}, state},
		{"rv=0", testPrefix, storage.WatchOptions{Mode: storage.ReadAny}, state},
		{"rv=N", testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: ra}, state[1:]},
		{"rv=current", testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: cur}, nil},
		{"sendInitialEvents", testPrefix, storage.WatchOptions{SendInitialEvents: ptr(true), AllowBookmarks: true},
			append(slices.Clone(state), fmt.Sprintf("BOOKMARK@%d end=true", cur))},
		{"sendInitialEvents=false", testPrefix, storage.WatchOptions{SendInitialEvents: ptr(false)}, nil},
		{"namespace", testPrefix + "ns1/", storage.WatchOptions{Mode: storage.ReadAny}, state[:1]},
		{"selector", testPrefix, storage.WatchOptions{Predicate: labelPred(t, "app=x")}, state[:1]},
	}
	watchers := make([]storage.EventStream, len(cases))
	for i, tc := range cases {
		watchers[i] = openWatch(t, c.Cache, tc.prefix, tc.opts)
		if got := describe(t, nextN(t, watchers[i], len(tc.initial))); !slices.Equal(got, tc.initial) {
			t.Fatalf("%s: initial events\n got %q\nwant %q", tc.name, got, tc.initial)
		}
	}
	// Changes: b starts matching app=x, a stops matching, a is deleted.
	r1 := mustUpdate(t, e.Store, "ns2", "b", map[string]string{"app": "x"})
	r2 := mustUpdate(t, e.Store, "ns1", "a", map[string]string{"app": "y"})
	r3 := mustDelete(t, e.Store, "ns1", "a")
	all := []string{
		fmt.Sprintf("MODIFIED %sns2/b@%d[app]", testPrefix, r1),
		fmt.Sprintf("MODIFIED %sns1/a@%d[app]", testPrefix, r2),
		fmt.Sprintf("DELETED %sns1/a@%d[app]", testPrefix, r3),
	}
	want := map[string][]string{
		"namespace": all[1:],
		"selector": {
			fmt.Sprintf("ADDED %sns2/b@%d[app]", testPrefix, r1),
			fmt.Sprintf("DELETED %sns1/a@%d[app]", testPrefix, r2),
		},
	}
	for i, tc := range cases {
		w, ok := want[tc.name]
		if !ok {
			w = all
		}
		evs := nextN(t, watchers[i], len(w))
		if got := describe(t, evs); !slices.Equal(got, w) {
			t.Fatalf("%s: changes\n got %q\nwant %q", tc.name, got, w)
		}
		if tc.name == "selector" {
			// Stopped matching: the previous object (old labels) at the new RV.
			if m := metaOf(t, evs[1].Object); m.Labels["app"] != "x" {
				t.Fatalf("DELETED on stop-matching carries labels %v, want the old ones", m.Labels)
			}
		}
		noEvent(t, watchers[i])
	}
}

// TestWatchFrameShared: one event is encoded once for all its watchers.
func TestWatchFrameShared(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{})
	w1 := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{SendInitialEvents: ptr(false)})
	w2 := openWatch(t, c.Cache, testPrefix+"ns/", storage.WatchOptions{SendInitialEvents: ptr(false)})
	mustCreate(t, e.Store, "ns", "a", nil)
	a, b := nextN(t, w1, 1)[0], nextN(t, w2, 1)[0]
	if a.Frame == nil || &a.Frame[0] != &b.Frame[0] {
		t.Fatalf("frames not shared: %p %p", a.Frame, b.Frame)
	}
	if want := `{"type":"ADDED","object":` + string(a.Object) + "}\n"; string(a.Frame) != want {
		t.Fatalf("frame %q, want %q", a.Frame, want)
	}
}

// TestWatchCompacted: a watch older than the history gets 410 on its first
// Next; a watch from a future revision times out.
func TestWatchCompacted(t *testing.T) {
	e := etcdtest.Start(t)
	old := mustCreate(t, e.Store, "ns", "a", nil)
	c := startCache(t, e.Store, Config{HistorySize: 2, FreshnessTimeout: 100 * time.Millisecond})
	for i := range 3 {
		mustCreate(t, e.Store, "ns", fmt.Sprintf("b%d", i), nil)
	}
	waitRev(t, c.Cache, e.Store)
	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: old})
	_, err := w.Next(context.Background())
	var ce *storage.CompactedError
	if !errors.As(err, &ce) || ce.Requested != old {
		t.Fatalf("Next: %v, want *CompactedError for %d", err, old)
	}
	if _, err := c.WatchList(context.Background(), testPrefix, storage.WatchOptions{Mode: storage.ReadNotOlderThan, Revision: 1000000, SendInitialEvents: ptr(true)}); !errors.Is(err, storage.ErrTooLargeResourceVersion) {
		t.Fatalf("future watch with initial events: %v", err)
	}
	// The watch's own deadline (its timeoutSeconds) ending the wait first
	// is still a revision not reached; a cancelled watch is not.
	short := startCache(t, e.Store, Config{FreshnessTimeout: time.Minute})
	waitRev(t, short.Cache, e.Store)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := short.WatchList(ctx, testPrefix, storage.WatchOptions{Mode: storage.ReadNotOlderThan, Revision: 1000000, SendInitialEvents: ptr(true)}); !errors.Is(err, storage.ErrTooLargeResourceVersion) {
		t.Fatalf("future watch past its deadline: %v", err)
	}
	gone, stop := context.WithCancel(context.Background())
	stop()
	if _, err := short.WatchList(gone, testPrefix, storage.WatchOptions{Mode: storage.ReadNotOlderThan, Revision: 1000000, SendInitialEvents: ptr(true)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled future watch: %v", err)
	}
}

// TestWatchBookmarks: watchers that allow bookmarks get them periodically,
// at the cache's revision, once the cache has passed the revision they
// began at (kube's watcher drops a bookmark that is not newer); others
// get none.
func TestWatchBookmarks(t *testing.T) {
	e := etcdtest.Start(t)
	mustCreate(t, e.Store, "ns", "a", nil)
	c := startCache(t, e.Store, Config{BookmarkInterval: 20 * time.Millisecond})
	cur := waitRev(t, c.Cache, e.Store)
	with := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: cur, AllowBookmarks: true})
	without := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: cur})
	// Ten bookmark ticks pass, the cache still at cur: none is sent.
	quiet, cancel := context.WithTimeout(context.Background(), 10*20*time.Millisecond)
	ev, err := with.Next(quiet)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("quiet watch: %+v, %v; want no bookmark while the cache is at %d", ev, err, cur)
	}
	r := mustCreate(t, e.Store, "ns", "b", nil)
	if ev := nextN(t, with, 1)[0]; ev.Type != wire.Added || ev.Revision != r {
		t.Fatalf("with bookmarks: %+v, want ADDED at %d first", ev, r)
	}
	for range 3 {
		ev := nextN(t, with, 1)[0]
		if ev.Type != wire.Bookmark || ev.Revision < r || ev.Object != nil || ev.Frame != nil {
			t.Fatalf("got %+v, want a bookmark at >= %d", ev, r)
		}
	}
	if ev := nextN(t, without, 1)[0]; ev.Type != wire.Added || ev.Revision != r {
		t.Fatalf("without bookmarks: %+v", ev)
	}
	noEvent(t, without)
}

// TestWatchSlow: a watcher that lags more than WatcherBuffer events
// delivers its window, then ends with ErrWatcherTooSlow.
func TestWatchSlow(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{WatcherBuffer: 3})
	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{SendInitialEvents: ptr(false)})
	var revs []int64
	for i := range 6 {
		revs = append(revs, mustCreate(t, e.Store, "ns", fmt.Sprintf("o%d", i), nil))
	}
	waitRev(t, c.Cache, e.Store)
	for i := range 3 {
		ev, err := w.Next(context.Background())
		if err != nil || ev.Revision != revs[i] {
			t.Fatalf("event %d: %+v %v", i, ev, err)
		}
	}
	_, err := w.Next(context.Background())
	if !errors.Is(err, ErrWatcherTooSlow) || !errors.Is(err, storage.ErrWatchClosed) {
		t.Fatalf("Next: %v, want ErrWatcherTooSlow", err)
	}
	// A watcher keeping up is not closed.
	w2 := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{SendInitialEvents: ptr(false)})
	for i := range 6 {
		r := mustCreate(t, e.Store, "ns", fmt.Sprintf("p%d", i), nil)
		if ev := nextN(t, w2, 1)[0]; ev.Revision != r {
			t.Fatalf("got %d want %d", ev.Revision, r)
		}
	}
}

func TestWatchClose(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{})
	w, err := c.WatchList(context.Background(), testPrefix, storage.WatchOptions{SendInitialEvents: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := w.Next(context.Background())
		done <- err
	}()
	w.Close()
	if err := <-done; !errors.Is(err, storage.ErrWatchClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w2 := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{SendInitialEvents: ptr(false)})
	if _, err := w2.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with ended ctx: %v", err)
	}
}

// TestWatchLegacyDoesNotWaitForFreshness: as kube's cacher, a watch with
// no resourceVersion and no sendInitialEvents starts from the cache's state
// even when the cache cannot show it has reached etcd's current revision
// (here: a write elsewhere in etcd, and no time to learn of it); only a
// watch that asked for initial events waits, and times out.
func TestWatchLegacyDoesNotWaitForFreshness(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{FreshnessTimeout: time.Nanosecond})
	mustCreate(t, e.Store, "ns1", "a", nil)
	waitRev(t, c.Cache, e.Store)
	if _, err := e.Store.Create(testCtx(t), "/registry/elsewhere/x", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadMostRecent})
	if got := describe(t, nextN(t, w, 1)); len(got) != 1 || !strings.HasPrefix(got[0], "ADDED "+testPrefix+"ns1/a@") {
		t.Fatalf("legacy watch: %q", got)
	}
	_, err := c.WatchList(testCtx(t), testPrefix, storage.WatchOptions{Mode: storage.ReadMostRecent, SendInitialEvents: ptr(true), AllowBookmarks: true})
	var tooLarge *storage.TooLargeResourceVersionError
	if err != nil && !errors.As(err, &tooLarge) {
		t.Fatalf("watch-list on a cache not known fresh: %v", err)
	}
}

// TestWatchFromRevisionOfAnotherPrefix: a watch at a revision written
// under another prefix (the revision a LIST elsewhere answered) starts:
// the cache asks storage for progress instead of waiting for a write to
// its own prefix, or etcd's periodic notification (an hour away here).
func TestWatchFromRevisionOfAnotherPrefix(t *testing.T) {
	ctx := testCtx(t)
	emb, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: t.TempDir(), ProgressNotifyInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	store := etcd.New(emb.Client())
	mustCreate(t, store, "ns", "a", nil)
	c := startCache(t, store, Config{FreshnessTimeout: 3 * time.Second})
	rev, err := store.Create(ctx, "/registry/secrets/ns/s", value("ns", "s", nil, "x"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.WatchList(ctx, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: rev})
	if err != nil {
		t.Fatalf("watch at %d: %v", rev, err)
	}
	w.Close()
}

// TestWatchFromFutureRevision: as kube's cacher, a watch from a revision
// the cache has not reached (etcd neither) starts at once and sends only
// the changes after that revision, when they come, with no bookmark
// before the cache has passed it.
func TestWatchFromFutureRevision(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{FreshnessTimeout: 100 * time.Millisecond})
	mustCreate(t, e.Store, "ns", "a", nil)
	future := waitRev(t, c.Cache, e.Store) + 2
	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: future, AllowBookmarks: true})
	mustCreate(t, e.Store, "ns", "b", nil) // future-1: not sent
	if rev := mustCreate(t, e.Store, "ns", "c", nil); rev != future {
		t.Fatalf("c created at %d, want %d", rev, future)
	}
	d := mustCreate(t, e.Store, "ns", "d", nil)
	got := describe(t, nextN(t, w, 1))
	if want := fmt.Sprintf("ADDED %sns/d@%d[]", testPrefix, d); got[0] != want {
		t.Fatalf("first event %q, want %q", got[0], want)
	}
}

// TestWatchBookmarkBeforeDeadline: a watch that allows bookmarks gets one
// 2 s before its context's deadline, as kube's cacher sends it, even when
// the periodic bookmark is an hour away, once the cache has passed the
// revision the watch began at; a watch of a quiet resource, or without
// bookmarks, gets none (kube's watcher drops a bookmark that is not
// newer than where it began).
func TestWatchBookmarkBeforeDeadline(t *testing.T) {
	e := etcdtest.Start(t)
	mustCreate(t, e.Store, "ns", "a", nil)
	c := startCache(t, e.Store, Config{BookmarkInterval: time.Hour})
	cur := waitRev(t, c.Cache, e.Store)
	open := func(ctx context.Context, bookmarks bool) storage.EventStream {
		w, err := c.WatchList(ctx, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: cur, AllowBookmarks: bookmarks})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Close)
		return w
	}

	// Nothing written: the watch ends at its deadline without a bookmark.
	quietCtx, cancel := context.WithTimeout(context.Background(), preDeadlineBookmark+500*time.Millisecond)
	defer cancel()
	if ev, err := open(quietCtx, true).Next(quietCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("quiet watch: %+v, %v; want no bookmark at %d, the revision it began at", ev, err, cur)
	}

	deadline := time.Now().Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	with, without := open(ctx, true), open(ctx, false)
	r := mustCreate(t, e.Store, "ns", "b", nil)
	for _, w := range []storage.EventStream{with, without} {
		if ev, err := w.Next(ctx); err != nil || ev.Type != wire.Added || ev.Revision != r {
			t.Fatalf("first event %+v, %v; want ADDED at %d", ev, err, r)
		}
	}
	ev, err := with.Next(ctx)
	switch {
	case err != nil || ev.Type != wire.Bookmark || ev.Revision < r:
		t.Fatalf("with bookmarks: %+v, %v; want a bookmark at >= %d before the deadline", ev, err, r)
	case time.Until(deadline) > preDeadlineBookmark+500*time.Millisecond:
		t.Fatalf("bookmark %s before the deadline, want about %s", time.Until(deadline), preDeadlineBookmark)
	}
	if ev, err := without.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("without bookmarks: %+v, %v; want the deadline", ev, err)
	}
}
