package etcd_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

func next(t *testing.T, w storage.Watcher) storage.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := w.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return ev
}

func TestWatchEventShapes(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	ctx := context.Background()
	const key = "/registry/pods/default/a"
	start, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/registry/pods/", start, false, storage.WithPrevValues())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rev1, _ := s.Create(ctx, key, pod("a", `"v":"1"`))
	rev2, _ := s.Update(ctx, key, pod("a", `"v":"2"`), rev1)
	if _, err := s.Create(ctx, "/registry/nodes/n", pod("n", "")); err != nil { // outside the prefix
		t.Fatal(err)
	}
	del, err := s.Delete(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}

	ev := next(t, w)
	if ev.Type != storage.EventPut || !ev.Created || ev.Revision != rev1 || ev.PrevValue != nil {
		t.Fatalf("create event %+v", ev)
	}
	checkKV(t, ev.KV, key, rev1)

	ev = next(t, w)
	if ev.Type != storage.EventPut || ev.Created || ev.Revision != rev2 {
		t.Fatalf("update event %+v", ev)
	}
	checkKV(t, ev.KV, key, rev2)
	if rvOf(t, ev.PrevValue) != itoa(rev1) || !strings.Contains(string(ev.PrevValue), `"v":"1"`) {
		t.Fatalf("update PrevValue %s", ev.PrevValue)
	}

	ev = next(t, w)
	if ev.Type != storage.EventDelete || ev.Revision != del.Revision {
		t.Fatalf("delete event %+v, want revision %d", ev, del.Revision)
	}
	checkKV(t, ev.KV, key, del.Revision)
	// The deleted object is stamped once, at the delete's revision, and
	// PrevValue shares it.
	if !strings.Contains(string(ev.KV.Value), `"v":"2"`) || string(ev.PrevValue) != string(ev.KV.Value) {
		t.Fatalf("delete event value %s prev %s", ev.KV.Value, ev.PrevValue)
	}

	w.Close()
	w.Close()
	if _, err := w.Next(ctx); !errors.Is(err, storage.ErrWatchClosed) {
		t.Fatalf("Next after Close: %v, want ErrWatchClosed", err)
	}
}

// TestWatchWithoutPrevValues: a watch that does not ask for previous
// values gets keys, new values and revisions only.
func TestWatchWithoutPrevValues(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	ctx := context.Background()
	const key = "/registry/pods/default/a"
	start, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/registry/pods/", start, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rev1, _ := s.Create(ctx, key, pod("a", `"v":"1"`))
	rev2, _ := s.Update(ctx, key, pod("a", `"v":"2"`), rev1)
	del, err := s.Delete(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, w); ev.Type != storage.EventPut || !ev.Created || ev.Revision != rev1 || ev.PrevValue != nil {
		t.Fatalf("create event %+v", ev)
	}
	ev := next(t, w)
	if ev.Type != storage.EventPut || ev.Created || ev.Revision != rev2 || ev.PrevValue != nil {
		t.Fatalf("update event %+v", ev)
	}
	checkKV(t, ev.KV, key, rev2)
	ev = next(t, w)
	if ev.Type != storage.EventDelete || ev.Revision != del.Revision || ev.KV.Key != key || ev.KV.Revision != del.Revision || ev.KV.Value != nil || ev.PrevValue != nil {
		t.Fatalf("delete event %+v", ev)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestWatchProgress(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	ctx := context.Background()
	rev, err := s.Create(ctx, "/registry/pods/default/a", pod("a", ""))
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := s.Watch(ctx, "/registry/pods/", rev, false)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	w, err := s.Watch(ctx, "/registry/pods/", rev, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// A write elsewhere moves the revision without an event here.
	other, err := s.Create(ctx, "/registry/nodes/n", pod("n", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	// Progress arrives on request or from the periodic notification; in
	// both cases it must eventually report the other write's revision.
	for {
		ev := next(t, w)
		if ev.Type != storage.EventProgress {
			t.Fatalf("event %+v, want only progress", ev)
		}
		if ev.Revision >= other {
			break
		}
	}
	// The watch that did not ask for progress gets none: its next event
	// is the real one.
	rev2, err := s.Update(ctx, "/registry/pods/default/a", pod("a", `"x":"y"`), rev)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, quiet); ev.Type != storage.EventPut || ev.Revision != rev2 {
		t.Fatalf("quiet watch got %+v, want the update at %d", ev, rev2)
	}
}

func TestWatchCompacted(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	ctx := context.Background()
	rev1, _ := s.Create(ctx, "/registry/pods/default/a", pod("a", ""))
	rev2, _ := s.Update(ctx, "/registry/pods/default/a", pod("a", `"x":"y"`), rev1)
	rev3, _ := s.Update(ctx, "/registry/pods/default/a", pod("a", `"x":"z"`), rev2)
	if err := s.Compact(ctx, rev3); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/registry/pods/", rev1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = w.Next(cctx)
	var ce *storage.CompactedError
	if !errors.As(err, &ce) || ce.Requested != rev1 || ce.Compacted != rev3 {
		t.Fatalf("watch from compacted revision: %v, want CompactedError{%d, %d}", err, rev1, rev3)
	}
	if _, err2 := w.Next(cctx); !errors.Is(err2, storage.ErrCompacted) {
		t.Fatalf("second Next: %v, want the same error", err2)
	}
	// From the compaction revision itself is still fine.
	w2, err := s.Watch(ctx, "/registry/pods/", rev3-1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if ev := next(t, w2); ev.Revision != rev3 {
		t.Fatalf("watch from %d: %+v", rev3-1, ev)
	}
}

func TestWatchContextEnds(t *testing.T) {
	t.Parallel()
	s := etcdtest.Start(t).Store
	wctx, cancelWatch := context.WithCancel(context.Background())
	w, err := s.Watch(wctx, "/registry/pods/", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	nctx, cancelNext := context.WithCancel(context.Background())
	cancelNext()
	if _, err := w.Next(nctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with a done ctx: %v", err)
	}
	cancelWatch()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after the watch's ctx ended: %v, want context.Canceled", err)
	}
}
