package direct_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
	"github.com/listwatch/listwatch/wire"
)

// got is an event reduced to what the tests compare.
type got struct {
	Type   wire.EventType
	Name   string
	App    string
	RV     int64
	End    bool
	objRev string
}

func nextEvent(t *testing.T, s storage.EventStream) got {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	g := got{Type: ev.Type, RV: ev.Revision, End: ev.InitialEventsEnd}
	if ev.Object != nil {
		var o wire.PartialObject
		if err := json.Unmarshal(ev.Object, &o); err != nil {
			t.Fatalf("event object %s: %v", ev.Object, err)
		}
		g.Name, g.App = o.Metadata.Name, o.Metadata.Labels["app"]
		if o.Metadata.ResourceVersion != strconv.FormatInt(ev.Revision, 10) {
			t.Fatalf("%s event for %s: object RV %s, event revision %d", ev.Type, g.Name, o.Metadata.ResourceVersion, ev.Revision)
		}
	}
	return g
}

func expect(t *testing.T, s storage.EventStream, want ...got) {
	t.Helper()
	for i, w := range want {
		if g := nextEvent(t, s); g != w {
			t.Fatalf("event %d: %+v, want %+v", i, g, w)
		}
	}
}

func watch(t *testing.T, r *direct.Reader, opts storage.WatchOptions) storage.EventStream {
	t.Helper()
	s, err := r.WatchList(context.Background(), prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func initialAdded(f fixture) []got {
	var out []got
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		app := "x"
		if n == "b" || n == "d" {
			app = "y"
		}
		out = append(out, got{Type: wire.Added, Name: n, App: app, RV: f.revs[n]})
	}
	return out
}

func TestWatchFromRevision(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	s := watch(t, f.r, storage.WatchOptions{Mode: storage.ReadExact, Revision: f.revs["c"]})
	rev, err := f.store.Update(ctx, prefix+"a", pod("a", "z"), 0)
	if err != nil {
		t.Fatal(err)
	}
	del, err := f.store.Delete(ctx, prefix+"b", 0)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, s,
		got{Type: wire.Added, Name: "d", App: "y", RV: f.revs["d"]},
		got{Type: wire.Added, Name: "e", App: "x", RV: f.revs["e"]},
		got{Type: wire.Modified, Name: "a", App: "z", RV: rev},
		got{Type: wire.Deleted, Name: "b", App: "y", RV: del.Revision},
	)
	s.Close()
	if _, err := s.Next(ctx); !errors.Is(err, storage.ErrWatchClosed) {
		t.Fatalf("Next after Close: %v, want ErrWatchClosed", err)
	}
}

// TestWatchInitialState covers RV "" and "0" (synthetic ADDED events,
// then changes) and sendInitialEvents (the same, ended by a bookmark),
// with the initial state spread over several pages.
func TestWatchInitialState(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	r := direct.NewWithPageSize(f.store, 2)
	cur, _ := f.store.CurrentRevision(ctx)
	yes, no := true, false
	streams := map[string]storage.EventStream{
		"unset":          watch(t, r, storage.WatchOptions{}),
		"zero":           watch(t, r, storage.WatchOptions{Mode: storage.ReadAny}),
		"initialEvents":  watch(t, r, storage.WatchOptions{SendInitialEvents: &yes, AllowBookmarks: true}),
		"initialEventsN": watch(t, r, storage.WatchOptions{SendInitialEvents: &yes, Mode: storage.ReadNotOlderThan, Revision: f.mid, AllowBookmarks: true}),
		// Without bookmarks, no bookmark ends them (as kube's).
		"initialEventsNoBookmark": watch(t, r, storage.WatchOptions{SendInitialEvents: &yes}),
		"noInitialEvents":         watch(t, r, storage.WatchOptions{SendInitialEvents: &no}),
	}
	rev, err := f.store.Update(ctx, prefix+"c", pod("c", "x2"), 0)
	if err != nil {
		t.Fatal(err)
	}
	change := got{Type: wire.Modified, Name: "c", App: "x2", RV: rev}
	end := got{Type: wire.Bookmark, RV: cur, End: true}
	for name, s := range streams {
		t.Run(name, func(t *testing.T) {
			switch name {
			case "unset", "zero", "initialEventsNoBookmark":
				expect(t, s, append(initialAdded(f), change)...)
			case "initialEvents", "initialEventsN":
				expect(t, s, append(initialAdded(f), end, change)...)
			default:
				expect(t, s, change)
			}
		})
	}
	yes = true
	_, err = f.r.WatchList(ctx, prefix, storage.WatchOptions{SendInitialEvents: &yes, Mode: storage.ReadNotOlderThan, Revision: rev + 100})
	if !errors.Is(err, storage.ErrTooLargeResourceVersion) {
		t.Fatalf("sendInitialEvents from a future revision: %v, want ErrTooLargeResourceVersion", err)
	}
}

// TestWatchSelectorTransitions: objects entering and leaving a selector
// arrive as ADDED and DELETED; others are dropped.
func TestWatchSelectorTransitions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	yes := true
	s := watch(t, f.r, storage.WatchOptions{Predicate: labelPred(t, "app=x"), SendInitialEvents: &yes, AllowBookmarks: true})
	cur, _ := f.store.CurrentRevision(ctx)
	write := func(name, app string) int64 {
		rev, err := f.store.Update(ctx, prefix+name, pod(name, app), 0)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	bIn := write("b", "x")  // starts matching
	aOut := write("a", "y") // stops matching
	cMod := write("c", "x") // still matches
	write("d", "w")         // never matches
	dDel, err := f.store.Delete(ctx, prefix+"d", 0)
	if err != nil {
		t.Fatal(err)
	}
	eDel, err := f.store.Delete(ctx, prefix+"e", 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = dDel
	newRev, err := f.store.Create(ctx, prefix+"f", pod("f", "x"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, s,
		got{Type: wire.Added, Name: "a", App: "x", RV: f.revs["a"]},
		got{Type: wire.Added, Name: "c", App: "x", RV: f.revs["c"]},
		got{Type: wire.Added, Name: "e", App: "x", RV: f.revs["e"]},
		got{Type: wire.Bookmark, RV: cur, End: true},
		got{Type: wire.Added, Name: "b", App: "x", RV: bIn},
		// The last matching state, at the update's revision.
		got{Type: wire.Deleted, Name: "a", App: "x", RV: aOut},
		got{Type: wire.Modified, Name: "c", App: "x", RV: cMod},
		got{Type: wire.Deleted, Name: "e", App: "x", RV: eDel.Revision},
		got{Type: wire.Added, Name: "f", App: "x", RV: newRev},
	)
}

func TestWatchCompacted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := f.store.Update(ctx, prefix+"a", pod("a", strconv.Itoa(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	cur, _ := f.store.CurrentRevision(ctx)
	if err := f.store.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	s := watch(t, f.r, storage.WatchOptions{Mode: storage.ReadExact, Revision: f.mid})
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := s.Next(cctx)
	var ce *storage.CompactedError
	if !errors.As(err, &ce) || ce.Compacted != cur {
		t.Fatalf("watch from a compacted revision: %v, want *CompactedError at %d", err, cur)
	}
}

// TestWatchBookmarks: with AllowBookmarks the store's progress becomes
// BOOKMARK events; without, none arrive.
func TestWatchBookmarks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	from := f.last
	with := watch(t, f.r, storage.WatchOptions{Mode: storage.ReadExact, Revision: from, AllowBookmarks: true})
	without := watch(t, f.r, storage.WatchOptions{Mode: storage.ReadExact, Revision: from})
	other, err := f.store.Create(ctx, "/registry/nodes/n", pod("n", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		g := nextEvent(t, with)
		if g.Type != wire.Bookmark || g.End || g.Name != "" {
			t.Fatalf("event %+v, want a plain bookmark", g)
		}
		if g.RV >= other {
			break
		}
	}
	rev, err := f.store.Update(ctx, prefix+"a", pod("a", "q"), 0)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, without, got{Type: wire.Modified, Name: "a", App: "q", RV: rev})
}

// TestWatchAsksForPrevValues: the direct reader is the consumer of the
// store's previous values: it asks etcd for them, and a DELETED event,
// for a delete or for an object leaving the selector, carries the last
// object the client saw.
func TestWatchAsksForPrevValues(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	spy := e.SpyWatches()
	r := direct.New(e.Store)
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		if _, err := e.Store.Create(ctx, prefix+n, pod(n, "x")); err != nil {
			t.Fatal(err)
		}
	}
	from, err := e.Store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := watch(t, r, storage.WatchOptions{Mode: storage.ReadExact, Revision: from, Predicate: labelPred(t, "app=x")})
	out, err := e.Store.Update(ctx, prefix+"a", pod("a", "y"), 0)
	if err != nil {
		t.Fatal(err)
	}
	del, err := e.Store.Delete(ctx, prefix+"b", 0)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, s,
		got{Type: wire.Deleted, Name: "a", App: "x", RV: out},
		got{Type: wire.Deleted, Name: "b", App: "x", RV: del.Revision},
	)
	reqs := spy.Requests()
	if len(reqs) != 1 || !reqs[0].PrevKV {
		t.Fatalf("etcd watches %+v, want one with previous values", reqs)
	}
}
