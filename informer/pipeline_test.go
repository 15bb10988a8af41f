package informer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// pageSink is a Sink that lists page by page and, while it takes the
// first page, waits for the reflector to ask for the next.
type pageSink struct {
	ctx       context.Context
	nextAsked <-chan struct{}
	mu        sync.Mutex
	pages     int
	err       error
	replaced  chan []U
}

func (s *pageSink) PrepareListed(page []U) error {
	s.mu.Lock()
	s.pages++
	first := s.pages == 1
	s.mu.Unlock()
	if !first {
		return nil
	}
	select {
	case <-s.nextAsked:
		return nil
	case <-s.ctx.Done():
		s.mu.Lock()
		s.err = errors.New("the next page was not asked for while the sink took the first")
		s.mu.Unlock()
		return s.err
	}
}

func (s *pageSink) ReplacePrepared(list []U, _ string) error {
	s.replaced <- list
	return nil
}

func (s *pageSink) Replace(list []U, rv string) error { return s.ReplacePrepared(list, rv) }
func (*pageSink) Add(U) error                         { return nil }
func (*pageSink) Update(U) error                      { return nil }
func (*pageSink) Delete(U) error                      { return nil }
func (*pageSink) Resync() error                       { return nil }

// TestListFetchesNextPageWhileSinkTakesOne: a LIST's next page is
// requested while the sink is still taking the page before it, and the
// sink is then given every object, in order.
func TestListFetchesNextPageWhileSinkTakesOne(t *testing.T) {
	srv := newFakeServer()
	for _, name := range []string{"a", "b", "c"} {
		srv.upsert("ns", name, nil)
	}
	nextAsked := make(chan struct{})
	var once sync.Once
	lw := informer.ListWatchFuncs[U]{
		ListFunc: func(ctx context.Context, opts wire.ListOptions) (*wire.List[U], error) {
			if opts.Continue != "" {
				once.Do(func() { close(nextAsked) })
			}
			return srv.List(ctx, opts)
		},
		WatchFunc: srv.Watch,
	}
	// The deadline only bounds a failure: without the overlap, the sink
	// waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sink := &pageSink{ctx: ctx, nextAsked: nextAsked, replaced: make(chan []U, 1)}
	r := informer.NewReflector[U](lw, sink, informer.ReflectorOptions{PageSize: 1, Logger: quiet})
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case list := <-sink.replaced:
		var names []string
		for _, o := range list {
			names = append(names, o.GetName())
		}
		if len(names) != 3 || names[0] != "a" || names[1] != "b" || names[2] != "c" {
			t.Fatalf("replaced with %v, want [a b c]", names)
		}
	case <-ctx.Done():
		sink.mu.Lock()
		defer sink.mu.Unlock()
		t.Fatalf("no Replace: %v", sink.err)
	}
}

// TestListResourceVersions: the first LIST asks for any state
// (resourceVersion "0", as client-go's reflector does); after a 410 the
// relist asks for the latest (a consistent read), as the first does with
// ConsistentFirstList; a streaming informer does not LIST.
func TestListResourceVersions(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 3)
	h := startHarness(t, srv, fastOpts(false, 2))
	h.mustConverge()
	if l := srv.listed(); l[0].ResourceVersion != "0" || l[0].ResourceVersionMatch != "" {
		t.Fatalf("first list with resourceVersion %q match %q, want \"0\" and none", l[0].ResourceVersion, l[0].ResourceVersionMatch)
	}
	before := len(srv.listed())
	srv.endWatches(gone())
	srv.upsert("ns", "after", nil)
	h.mustConverge()
	l := srv.listed()
	if len(l) == before {
		t.Fatal("no relist after 410")
	}
	if relist := l[before]; relist.ResourceVersion != "" || relist.Continue != "" {
		t.Fatalf("relist after 410 with resourceVersion %q continue %q, want a consistent read", relist.ResourceVersion, relist.Continue)
	}

	srv = newFakeServer()
	seed(srv, 3)
	opts := fastOpts(false, 2)
	opts.ConsistentFirstList = true
	h = startHarness(t, srv, opts)
	h.mustConverge()
	if l := srv.listed(); l[0].ResourceVersion != "" || l[0].ResourceVersionMatch != "" {
		t.Fatalf("ConsistentFirstList: first list with resourceVersion %q match %q, want a consistent read", l[0].ResourceVersion, l[0].ResourceVersionMatch)
	}

	srv = newFakeServer()
	seed(srv, 3)
	h = startHarness(t, srv, fastOpts(true, 2))
	h.mustConverge()
	srv.mu.Lock()
	streams := srv.streamCalls
	srv.mu.Unlock()
	if streams == 0 {
		t.Fatal("streaming informer did not stream")
	}
	if l := srv.listed(); len(l) > 0 {
		t.Fatalf("streaming informer listed: %+v", l)
	}
}

// chunkLW lists srv's objects a chunk of one at a time through
// ListChunksFunc; before each chunk after the first it calls between with
// the name of the item handed over last (the item itself is the
// informer's once handed over).
func chunkLW(srv *fakeServer, between func(ctx context.Context, last string) error) informer.ListWatchFuncs[U] {
	return informer.ListWatchFuncs[U]{
		ListFunc:  srv.List,
		WatchFunc: srv.Watch,
		ListChunksFunc: func(ctx context.Context, opts wire.ListOptions, _ int, each func([]U) error) (wire.ListMeta, error) {
			page, err := srv.List(ctx, opts)
			if err != nil {
				return wire.ListMeta{}, err
			}
			last := ""
			for _, o := range page.Items {
				if last != "" {
					if err := between(ctx, last); err != nil {
						return wire.ListMeta{}, err
					}
				}
				last = o.GetName()
				if err := each([]U{o}); err != nil {
					return wire.ListMeta{}, err
				}
			}
			return page.Metadata, nil
		},
	}
}

// TestFirstListStoredWhileRead: the objects of the first list reach the
// store and the handlers, flagged as the initial list, while the list is
// still being read; the informer has synced only once it is complete. A
// first attempt refused before any item does not change that.
func TestFirstListStoredWhileRead(t *testing.T) {
	srv := newFakeServer()
	for _, name := range []string{"a", "b", "c"} {
		srv.upsert("ns", name, nil)
	}
	added := make(chan string, 3)
	var (
		inf     *informer.Informer[U]
		reg     *informer.Registration[U]
		mu      sync.Mutex
		listErr error // the first failure seen; later lists are not checked
	)
	failed := func(err error) error {
		mu.Lock()
		defer mu.Unlock()
		if listErr == nil {
			listErr = err
			return err
		}
		return nil
	}
	lw := chunkLW(srv, func(ctx context.Context, last string) error {
		mu.Lock()
		done := listErr != nil
		mu.Unlock()
		if done {
			return nil
		}
		// The deadline only bounds a failure: without early queueing the
		// handler sees nothing until the list ends.
		select {
		case k := <-added:
			if k != "ns/"+last {
				return failed(fmt.Errorf("added %s, want ns/%s", k, last))
			}
		case <-time.After(10 * time.Second):
			return failed(fmt.Errorf("ns/%s not handed out while the list was read", last))
		}
		if _, ok := inf.Lister().Get("ns", last); !ok {
			return failed(fmt.Errorf("ns/%s handed out but not stored", last))
		}
		if reg.HasSynced() {
			return failed(errors.New("synced before the list ended"))
		}
		return nil
	})
	// The first attempt fails before any item arrives (a server not up
	// yet): that must not use up the early list.
	var refused sync.Once
	chunks := lw.ListChunksFunc
	lw.ListChunksFunc = func(ctx context.Context, opts wire.ListOptions, n int, each func([]U) error) (wire.ListMeta, error) {
		err := error(syscall.ECONNREFUSED)
		refused.Do(func() { err = nil })
		if err == nil {
			return wire.ListMeta{}, syscall.ECONNREFUSED
		}
		return chunks(ctx, opts, n, each)
	}
	inf, err := informer.New[U](lw, informer.Options[U]{Reflector: fastOpts(false, 0)})
	if err != nil {
		t.Fatal(err)
	}
	reg, err = inf.AddEventHandler(informer.HandlerFuncs[U]{AddFunc: func(o U, initial bool) {
		if !initial {
			failed(fmt.Errorf("%s added outside the initial list", object.Key(o)))
		}
		select {
		case added <- object.Key(o):
		default:
			failed(fmt.Errorf("%s added twice", object.Key(o)))
		}
	}}, informer.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if !informer.WaitForCacheSync(ctx, reg.HasSynced) {
		t.Fatal("never synced")
	}
	mu.Lock()
	defer mu.Unlock()
	if listErr != nil {
		t.Fatal(listErr)
	}
	if n := len(inf.Lister().List()); n != 3 {
		t.Fatalf("%d objects stored, want 3", n)
	}
}

// TestEarlyListFailsThenRelists: a first list queued as it arrives that
// fails half-way is settled by the next list like any earlier state: an
// object handed out by the failed list and gone since is deleted, and the
// informer has synced only after the complete list.
func TestEarlyListFailsThenRelists(t *testing.T) {
	srv := newFakeServer()
	for _, name := range []string{"a", "b", "c"} {
		srv.upsert("ns", name, nil)
	}
	var once sync.Once
	lw := chunkLW(srv, func(ctx context.Context, last string) error {
		var err error
		if last == "b" {
			once.Do(func() {
				srv.remove("ns", "b")
				err = syscall.ECONNRESET
			})
		}
		return err
	})
	h := startHarnessLW(t, srv, lw, fastOpts(false, 0))
	h.mustConverge()
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	if h.rec.adds != 3 || h.rec.deletes != 1 || h.rec.unknown != 1 {
		t.Fatalf("%d adds, %d deletes (%d final state unknown), want a, b and c added and b deleted, its final state unknown",
			h.rec.adds, h.rec.deletes, h.rec.unknown)
	}
	if l := len(srv.listed()); l != 2 {
		t.Fatalf("%d lists, want 2", l)
	}
}

// TestBeginEarlyList: a queue takes one list early, only its first, and
// only while it holds nothing and its KnownObjects hold nothing.
func TestBeginEarlyList(t *testing.T) {
	q := informer.NewDeltaQueue[U](informer.DeltaQueueOptions[U]{})
	if err := q.QueueListed([]U{newObj("ns", "a", nil)}); err == nil {
		t.Fatal("QueueListed without BeginEarlyList")
	}
	if !q.BeginEarlyList() {
		t.Fatal("an empty queue refused its first list")
	}
	if err := q.QueueListed([]U{newObj("ns", "a", nil)}); err != nil {
		t.Fatal(err)
	}
	if q.HasSynced() {
		t.Fatal("synced before the list ended")
	}
	if err := q.EndEarlyList("1"); err != nil {
		t.Fatal(err)
	}
	if q.HasSynced() || q.Len() != 1 {
		t.Fatalf("synced %v with %d queued, want not synced and 1", q.HasSynced(), q.Len())
	}
	if q.BeginEarlyList() {
		t.Fatal("a second list begun early")
	}

	// While a list is being read early, Resync queues nothing, as before
	// the first Replace: the store holds only part of a list.
	store, err := informer.NewStore[U](nil)
	if err != nil {
		t.Fatal(err)
	}
	q = informer.NewDeltaQueue[U](informer.DeltaQueueOptions[U]{KnownObjects: store})
	if !q.BeginEarlyList() {
		t.Fatal("refused")
	}
	if err := q.QueueListed([]U{newObj("ns", "a", nil)}); err != nil {
		t.Fatal(err)
	}
	if err := q.Pop(context.Background(), func(_ string, ds informer.Deltas[U], _ bool) error {
		o, _ := ds.Newest()
		store.Update(o.Object)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := q.Resync(); err != nil || q.Len() != 0 {
		t.Fatalf("Resync during an early list queued %d (%v)", q.Len(), err)
	}
	if err := q.EndEarlyList("1"); err != nil {
		t.Fatal(err)
	}
	if err := q.Resync(); err != nil || q.Len() != 1 {
		t.Fatalf("Resync after the list queued %d (%v), want 1", q.Len(), err)
	}

	store, err = informer.NewStore[U](nil)
	if err != nil {
		t.Fatal(err)
	}
	store.Add(newObj("ns", "known", nil))
	q = informer.NewDeltaQueue[U](informer.DeltaQueueOptions[U]{KnownObjects: store})
	if q.BeginEarlyList() {
		t.Fatal("a list begun early over known objects")
	}
	q = informer.NewDeltaQueue[U](informer.DeltaQueueOptions[U]{})
	if err := q.Add(newObj("ns", "queued", nil)); err != nil {
		t.Fatal(err)
	}
	if q.BeginEarlyList() {
		t.Fatal("a list begun early over queued objects")
	}
}

// TestFailedEarlyListRelistsConsistently: once a first list has handed
// objects out early and then failed, the next list asks for the latest
// state, not any: another replica's lagging cache could answer "any" with
// a state older than what the handlers have already seen.
func TestFailedEarlyListRelistsConsistently(t *testing.T) {
	srv := newFakeServer()
	for _, name := range []string{"a", "b"} {
		srv.upsert("ns", name, nil)
	}
	var once sync.Once
	lw := chunkLW(srv, func(ctx context.Context, last string) error {
		var err error
		once.Do(func() { err = syscall.ECONNRESET })
		return err
	})
	h := startHarnessLW(t, srv, lw, fastOpts(false, 0))
	h.mustConverge()
	l := srv.listed()
	if len(l) != 2 || l[0].ResourceVersion != "0" || l[1].ResourceVersion != "" {
		t.Fatalf("lists at resourceVersions %v, want \"0\", then the latest", l)
	}
}
