package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
	"github.com/listwatch/listwatch/wire"
)

var errInjected = errors.New("injected watch failure")

// faultStore wraps a real store to stall, break and gate the cache's
// watch and to see its progress requests.
type faultStore struct {
	storage.Interface

	mu sync.Mutex
	// hold, while non-nil, stops watch events from being delivered until
	// it is closed.
	hold chan struct{}
	// gate, while non-nil, blocks new watches until it is closed.
	gate chan struct{}
	// cancels break the open watches.
	cancels []context.CancelFunc
	// progress receives a value (without blocking) per RequestProgress.
	progress chan struct{}
	watches  int
}

func newFaultStore(s storage.Interface) *faultStore {
	return &faultStore{Interface: s, progress: make(chan struct{}, 1)}
}

func (f *faultStore) Watch(ctx context.Context, prefix string, from int64, progress bool, opts ...storage.WatchOption) (storage.Watcher, error) {
	f.mu.Lock()
	gate := f.gate
	f.watches++
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := f.Interface.Watch(wctx, prefix, from, progress, opts...)
	if err != nil {
		cancel()
		return nil, err
	}
	f.mu.Lock()
	f.cancels = append(f.cancels, cancel)
	f.mu.Unlock()
	return &faultWatcher{Watcher: w, f: f, ctx: wctx, cancel: cancel}, nil
}

func (f *faultStore) RequestProgress(ctx context.Context) error {
	select {
	case f.progress <- struct{}{}:
	default:
	}
	return f.Interface.RequestProgress(ctx)
}

func (f *faultStore) holdEvents() {
	f.mu.Lock()
	f.hold = make(chan struct{})
	f.mu.Unlock()
}

func (f *faultStore) releaseEvents() {
	f.mu.Lock()
	close(f.hold)
	f.hold = nil
	f.mu.Unlock()
}

// breakWatches fails the open watches and gates the next ones.
func (f *faultStore) breakWatches() {
	f.mu.Lock()
	f.gate = make(chan struct{})
	for _, c := range f.cancels {
		c()
	}
	f.cancels = nil
	f.mu.Unlock()
}

func (f *faultStore) openGate() {
	f.mu.Lock()
	close(f.gate)
	f.gate = nil
	f.mu.Unlock()
}

type faultWatcher struct {
	storage.Watcher
	f      *faultStore
	ctx    context.Context
	cancel context.CancelFunc
}

func (w *faultWatcher) Next(ctx context.Context) (storage.Event, error) {
	ev, err := w.Watcher.Next(ctx)
	if err != nil {
		if w.ctx.Err() != nil && ctx.Err() == nil {
			return ev, errInjected
		}
		return ev, err
	}
	w.f.mu.Lock()
	hold := w.f.hold
	w.f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return storage.Event{}, ctx.Err()
		case <-w.ctx.Done():
			return storage.Event{}, errInjected
		}
	}
	return ev, nil
}

func (w *faultWatcher) Close() { w.cancel(); w.Watcher.Close() }

// TestConsistentReadWaits: a consistent LIST waits for the cache to see
// etcd's revision, asking for progress, and is served by the cache.
func TestConsistentReadWaits(t *testing.T) {
	e := etcdtest.Start(t)
	f := newFaultStore(e.Store)
	c := startCache(t, f, Config{FreshnessTimeout: time.Minute})
	f.holdEvents()
	r := mustCreate(t, e.Store, "ns", "a", nil)
	select { // drop an earlier request
	case <-f.progress:
	default:
	}
	done := make(chan storage.ListPage)
	go func() {
		page, err := c.GetList(context.Background(), testPrefix, storage.GetListOptions{})
		if err != nil {
			t.Error(err)
		}
		done <- page
	}()
	<-f.progress // the read is waiting and asked for progress
	select {
	case page := <-done:
		t.Fatalf("consistent read returned %d items at %d while the cache was behind", len(page.Items), page.Revision)
	default:
	}
	f.releaseEvents()
	page := <-done
	if page.Revision < r || len(page.Items) != 1 {
		t.Fatalf("got %d items at %d, want 1 at >= %d", len(page.Items), page.Revision, r)
	}
	if n := counterValue(t, c.m.fallbacks); n != 0 {
		t.Fatalf("fallbacks = %v", n)
	}
}

// TestConsistentReadFallback: when the cache cannot catch up in time, a
// consistent LIST reads etcd, pages included, and is counted.
func TestConsistentReadFallback(t *testing.T) {
	e := etcdtest.Start(t)
	f := newFaultStore(e.Store)
	c := startCache(t, f, Config{FreshnessTimeout: 50 * time.Millisecond})
	f.holdEvents()
	defer f.releaseEvents()
	for i := range 3 {
		mustCreate(t, e.Store, "ns", fmt.Sprintf("o%d", i), map[string]string{"i": fmt.Sprint(i)})
	}
	for _, p := range []storage.Predicate{{}, labelPred(t, "i!=1")} {
		items, rev, err := listAll(t, c, testPrefix, storage.GetListOptions{Limit: 1, Predicate: p})
		if err != nil {
			t.Fatal(err)
		}
		if err := sameKVs(items, oracleList(t, e.Store, testPrefix, rev, p)); err != nil {
			t.Fatal(err)
		}
		if len(items) == 0 {
			t.Fatal("fallback read nothing")
		}
	}
	if n := counterValue(t, c.m.fallbacks); n != 2 {
		t.Fatalf("fallbacks = %v, want 2", n)
	}
}

// TestRelistAfterCompaction: when the cache's watch resumes at a compacted
// revision, the cache re-lists, ends open watches after what they had, and
// serves the new state.
func TestRelistAfterCompaction(t *testing.T) {
	e := etcdtest.Start(t)
	f := newFaultStore(e.Store)
	mustCreate(t, e.Store, "ns", "gone", nil)
	mustCreate(t, e.Store, "ns", "kept", nil)
	c := startCache(t, f, Config{})
	r0 := mustUpdate(t, e.Store, "ns", "kept", map[string]string{"v": "1"})
	waitRev(t, c.Cache, e.Store)
	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: r0 - 1})

	f.breakWatches()
	mustDelete(t, e.Store, "ns", "gone")
	mustCreate(t, e.Store, "ns", "new", nil)
	cur, err := e.Store.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Compact(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	f.openGate()
	waitRev(t, c.Cache, e.Store)

	items, rev, err := listAll(t, c, testPrefix, storage.GetListOptions{Mode: storage.ReadAny})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameKVs(items, oracleList(t, e.Store, testPrefix, rev, storage.Predicate{})); err != nil {
		t.Fatal(err)
	}
	// The old watch delivers what it had, then ends so its client resumes.
	if ev := nextN(t, w, 1)[0]; ev.Type != wire.Modified || ev.Revision != r0 {
		t.Fatalf("old watch: %+v", ev)
	}
	if _, err := w.Next(context.Background()); !errors.Is(err, ErrRelisted) {
		t.Fatalf("old watch after relist: %v", err)
	}
	// Resuming from before the relist is 410; from the new revision works.
	w2 := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: r0})
	var ce *storage.CompactedError
	if _, err := w2.Next(context.Background()); !errors.As(err, &ce) {
		t.Fatalf("watch from before the relist: %v", err)
	}
	w3 := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: rev})
	r := mustCreate(t, e.Store, "ns", "later", nil)
	if got := describe(t, nextN(t, w3, 1)); !slices.Equal(got, []string{fmt.Sprintf("ADDED %sns/later@%d[]", testPrefix, r)}) {
		t.Fatalf("after relist: %q", got)
	}
}

// TestResumeWithoutRelist: a broken (not compacted) watch resumes from the
// last revision: no event is lost or repeated and open watches continue.
func TestResumeWithoutRelist(t *testing.T) {
	e := etcdtest.Start(t)
	f := newFaultStore(e.Store)
	c := startCache(t, f, Config{})
	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{SendInitialEvents: ptr(false)})
	r1 := mustCreate(t, e.Store, "ns", "a", nil)
	waitRev(t, c.Cache, e.Store)
	f.breakWatches()
	r2 := mustCreate(t, e.Store, "ns", "b", nil)
	f.openGate()
	got := describe(t, nextN(t, w, 2))
	want := []string{fmt.Sprintf("ADDED %sns/a@%d[]", testPrefix, r1), fmt.Sprintf("ADDED %sns/b@%d[]", testPrefix, r2)}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
	noEvent(t, w)
}

func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
