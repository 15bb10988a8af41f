package apiserver

import (
	"strings"

	"context"
	"errors"
	"fmt"
	"github.com/listwatch/listwatch/wire"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/server"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	)
}

// TestCacheSetLifecycle: caches are created only while Run runs (none is
// left unstarted before or after), as many resources as are asked for
// get one (no start queue to overflow), and Run returns after every
// cache's Run has.
func TestCacheSetLifecycle(t *testing.T) {
	et := etcdtest.Start(t)
	s := newCacheSet(et.Store, direct.New(et.Store), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ctx := context.Background()
	early := s.Open(server.ReaderSpec{Prefix: "/registry/configmaps/"}).(*cachedReader)
	if _, err := early.GetList(ctx, "/registry/configmaps/", storage.GetListOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := s.started(); n != 0 {
		t.Fatalf("%d caches created before Run", n)
	}

	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	const resources = 100
	readers := make([]*cachedReader, resources)
	for r := range resources {
		readers[r] = s.Open(server.ReaderSpec{Prefix: fmt.Sprintf("/registry/r%d/", r)}).(*cachedReader)
	}
	// Every cache starts with Run or at Open, as kube's: no read needed.
	waitBuilt(t, append(readers, early))
	if n := s.started(); n != resources+1 {
		t.Fatalf("%d caches for %d resources", n, resources+1)
	}
	waitReady(t, readers)

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	late := s.Open(server.ReaderSpec{Prefix: "/registry/late/"}).(*cachedReader)
	if c := late.get(); c != nil || s.started() != resources+1 {
		t.Fatalf("a read after Run returned made a cache (%d caches)", s.started())
	}
	if c := readers[1].get(); c != nil {
		t.Fatal("a stopped cache still serves")
	}
}

// TestCacheSetClose: closing a reader stops its cache and returns after
// the cache's goroutines and etcd watch are gone; reads then go to
// storage, and no new cache is made for it.
func TestCacheSetClose(t *testing.T) {
	et, s, ctx := runCacheSet(t, 0)
	if _, err := et.Store.Create(ctx, "/registry/example.com/widgets/w1", []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"}}`)); err != nil {
		t.Fatal(err)
	}
	r := s.Open(server.ReaderSpec{Prefix: "/registry/example.com/widgets/"}).(*cachedReader)
	waitReady(t, []*cachedReader{r})
	w, err := r.WatchList(ctx, "/registry/example.com/widgets/", storage.WatchOptions{Mode: storage.ReadAny})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Next(ctx); err != nil { // the initial ADDED of w1
		t.Fatal(err)
	}
	s.mu.Lock()
	runDone := r.done
	s.mu.Unlock()

	r.Close()
	select {
	case <-runDone:
	default:
		t.Fatal("Close returned before the cache's Run")
	}
	if _, err := w.Next(ctx); !errors.Is(err, storage.ErrWatchClosed) {
		t.Fatalf("watch of a closed cache: %v", err)
	}
	page, err := r.GetList(ctx, "/registry/example.com/widgets/", storage.GetListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("read after Close: %v %v", page.Items, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.c != nil || len(s.open) != 0 || len(s.stopping) != 0 {
		t.Fatalf("closed reader kept: cache %v, %d open, %d stopping", r.c, len(s.open), len(s.stopping))
	}
}

// waitBuilt waits, without reading, until each reader's cache is ready.
func waitBuilt(t *testing.T, readers []*cachedReader) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := 0
		for _, r := range readers {
			r.set.mu.Lock()
			if r.c != nil && r.c.Ready() {
				ready++
			}
			r.set.mu.Unlock()
		}
		if ready == len(readers) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d caches ready without reads", ready, len(readers))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitReady reads through each reader until all serve from their cache.
func waitReady(t *testing.T, readers []*cachedReader) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ready atomic.Int64
		var wg sync.WaitGroup
		for _, r := range readers {
			wg.Go(func() {
				if r.get() != nil {
					ready.Add(1)
				}
			})
		}
		wg.Wait()
		if int(ready.Load()) == len(readers) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d caches ready", ready.Load(), len(readers))
		}
		time.Sleep(10 * time.Millisecond) // polling a real condition, with a deadline
	}
}

// started counts the open readers whose cache was made.
func (s *cacheSet) started() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for r := range s.open {
		if r.c != nil {
			n++
		}
	}
	return n
}

// TestCacheSetConsistentListFallsBack: a consistent LIST (no
// resourceVersion) that the cache cannot serve fresh in time is answered
// from etcd (the cache's own fallback, as kube's ConsistentListFromCache
// falls back), not refused — also for caches started with the server.
func TestCacheSetConsistentListFallsBack(t *testing.T) {
	et, s, ctx := runCacheSet(t, time.Nanosecond)
	const prefix = "/registry/example.com/widgets/"
	if _, err := et.Store.Create(ctx, prefix+"w1", []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"}}`)); err != nil {
		t.Fatal(err)
	}
	r := s.Open(server.ReaderSpec{Prefix: prefix}).(*cachedReader)
	waitBuilt(t, []*cachedReader{r})
	// A write elsewhere moves etcd's revision past the cache's, which
	// only a progress notification could bring level: not in 1ns.
	if _, err := et.Store.Create(ctx, "/registry/elsewhere/x", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	page, err := r.GetList(ctx, prefix, storage.GetListOptions{Mode: storage.ReadMostRecent})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("consistent list: %v items, %v", len(page.Items), err)
	}
}

// TestCacheSetWatchListFallsBack: a watch-list (sendInitialEvents=true, no
// resourceVersion) on a cache that cannot prove it holds etcd's current
// revision in time is served by the direct reader: the initial events,
// then the bookmark that ends them, not a 504.
func TestCacheSetWatchListFallsBack(t *testing.T) {
	et, s, ctx := runCacheSet(t, time.Nanosecond)
	const prefix = "/registry/example.com/widgets/"
	if _, err := et.Store.Create(ctx, prefix+"w1", []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"}}`)); err != nil {
		t.Fatal(err)
	}
	r := s.Open(server.ReaderSpec{Prefix: prefix}).(*cachedReader)
	waitBuilt(t, []*cachedReader{r})
	if _, err := et.Store.Create(ctx, "/registry/elsewhere/x", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	yes := true
	w, err := r.WatchList(ctx, prefix, storage.WatchOptions{Mode: storage.ReadMostRecent, SendInitialEvents: &yes, AllowBookmarks: true})
	if err != nil {
		t.Fatalf("watch-list: %v", err)
	}
	defer w.Close()
	ev, err := w.Next(ctx)
	if err != nil || ev.Type != wire.Added || !strings.Contains(string(ev.Object), `"w1"`) {
		t.Fatalf("first event %v %s, %v; want ADDED w1", ev.Type, ev.Object, err)
	}
	if ev, err = w.Next(ctx); err != nil || ev.Type != wire.Bookmark || !ev.InitialEventsEnd {
		t.Fatalf("second event %v (end %v), %v; want the bookmark ending the initial events", ev.Type, ev.InitialEventsEnd, err)
	}
}

// aheadStore claims a current revision far ahead of etcd's once ahead is
// set, so that no cache can prove it is fresh.
type aheadStore struct {
	storage.Interface
	ahead atomic.Bool
}

func (s *aheadStore) CurrentRevision(ctx context.Context) (int64, error) {
	rev, err := s.Interface.CurrentRevision(ctx)
	if s.ahead.Load() {
		rev += 1000
	}
	return rev, err
}

// TestCacheSetWatchListDeadline: a watch-list from "now" whose own
// deadline (its timeoutSeconds) ends the wait for the cache to be fresh
// gets the too-large error (the server sends it as the stream's ERROR
// event, as kube's cacher), not a fall-back to etcd with a context that
// has already ended.
func TestCacheSetWatchListDeadline(t *testing.T) {
	et := etcdtest.Start(t)
	store := &aheadStore{Interface: et.Store}
	s := newCacheSet(store, direct.New(store), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	s.freshness = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	const prefix = "/registry/example.com/widgets/"
	r := s.Open(server.ReaderSpec{Prefix: prefix}).(*cachedReader)
	waitBuilt(t, []*cachedReader{r})
	store.ahead.Store(true)
	wctx, wcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer wcancel()
	yes := true
	_, err := r.WatchList(wctx, prefix, storage.WatchOptions{Mode: storage.ReadMostRecent, SendInitialEvents: &yes, AllowBookmarks: true})
	if !errors.Is(err, storage.ErrTooLargeResourceVersion) {
		t.Fatalf("watch-list past its deadline: %v, want the too-large error", err)
	}
}

// TestCacheSetWatchBehindCacheFallsBack: a watch from a revision before
// the cache's history began (the cache started after the list the client
// watches from) is served from etcd, which still holds it; once etcd has
// compacted it, the answer is a *storage.CompactedError (410).
func TestCacheSetWatchBehindCacheFallsBack(t *testing.T) {
	et, s, ctx := runCacheSet(t, 0)
	const prefix = "/registry/example.com/widgets/"
	listed, err := et.Store.Create(ctx, prefix+"w1", []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := et.Store.Create(ctx, "/registry/elsewhere/x", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	r := s.Open(server.ReaderSpec{Prefix: prefix}).(*cachedReader)
	waitBuilt(t, []*cachedReader{r})
	if c := r.get(); c == nil || c.Reaches(listed) {
		t.Fatalf("the cache's history reaches back to %d: the test needs it to begin later", listed)
	}
	w, err := r.WatchList(ctx, prefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: listed})
	if err != nil {
		t.Fatalf("watch from %d: %v", listed, err)
	}
	defer w.Close()
	if _, err := et.Store.Create(ctx, prefix+"w2", []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2"}}`)); err != nil {
		t.Fatal(err)
	}
	ev, err := w.Next(ctx)
	if err != nil || ev.Type != wire.Added || !strings.Contains(string(ev.Object), `"w2"`) {
		t.Fatalf("first event %v %s, %v; want ADDED w2", ev.Type, ev.Object, err)
	}

	cur, err := et.Store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := et.Client.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	w2, err := r.WatchList(ctx, prefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: listed})
	if err == nil {
		defer w2.Close()
		_, err = w2.Next(ctx)
	}
	if !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("watch from %d after etcd compacted %d: %v, want a CompactedError", listed, cur, err)
	}
}

// runCacheSet runs a cache set over a fresh etcd until the test ends;
// freshness, if not 0, replaces its freshness timeout.
func runCacheSet(t *testing.T, freshness time.Duration) (*etcdtest.Etcd, *cacheSet, context.Context) {
	t.Helper()
	et := etcdtest.Start(t)
	s := newCacheSet(et.Store, direct.New(et.Store), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if freshness != 0 {
		s.freshness = freshness
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return et, s, ctx
}
