package informer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/informer"
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
