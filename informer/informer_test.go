package informer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

func TestLateHandlerGetsStoreThenChanges(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 5)
	h := startHarness(t, srv, fastOpts(false, 2))
	h.mustConverge()
	late := newRecorder()
	reg, err := h.inf.AddEventHandler(late, informer.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv.upsert("ns", "o00", nil)
	srv.remove("ns", "o01")
	srv.upsert("ns", "new", nil)
	h.mustConverge()
	if !informer.WaitForCacheSync(t.Context(), reg.HasSynced) {
		t.Fatal("late registration never synced")
	}
	// The late handler's view must match too, with a consistent history.
	deadline := time.Now().Add(5 * time.Second)
	for {
		seen, errs := late.snapshot()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if fmt.Sprint(seen) == fmt.Sprint(srv.state()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late handler %v, server %v", seen, srv.state())
		}
		time.Sleep(time.Millisecond) // polling a real condition, with a deadline
	}
	late.mu.Lock()
	defer late.mu.Unlock()
	if late.initial != 5 {
		t.Errorf("late handler initial adds = %d, want 5", late.initial)
	}
}

// blockingHandler blocks in OnAdd until released.
type blockingHandler struct {
	informer.HandlerFuncs[U]
	release chan struct{}
}

func TestSlowHandlerDoesNotBlockOthers(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 3)
	slow := &blockingHandler{release: make(chan struct{})}
	slow.AddFunc = func(U, bool) { <-slow.release }
	h := startHarness(t, srv, fastOpts(false, 0))
	slowReg, _ := h.inf.AddEventHandler(slow, informer.HandlerOptions{})
	for i := range 50 {
		srv.upsert("ns", fmt.Sprintf("x%d", i), nil)
	}
	h.mustConverge() // the fast recorder and the store got everything
	if slowReg.HasSynced() {
		t.Fatal("slow handler reports synced while blocked")
	}
	close(slow.release)
	if !informer.WaitForCacheSync(t.Context(), slowReg.HasSynced) {
		t.Fatal("slow handler never synced")
	}
}

func TestRemoveStopsDeliveries(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 2)
	h := startHarness(t, srv, fastOpts(false, 0))
	var mu sync.Mutex
	count := 0
	reg, _ := h.inf.AddEventHandler(informer.HandlerFuncs[U]{UpdateFunc: func(U, U) {
		mu.Lock()
		count++
		mu.Unlock()
	}}, informer.HandlerOptions{})
	h.mustConverge()
	reg.Remove()
	reg.Remove()
	srv.upsert("ns", "o00", nil)
	h.mustConverge()
	mu.Lock()
	defer mu.Unlock()
	if count != 0 {
		t.Fatalf("removed handler got %d updates", count)
	}
}

func TestPerHandlerResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer()
		seed(srv, 3)
		inf, err := informer.New[U](srv, informer.Options[U]{Reflector: fastOpts(false, 0)})
		if err != nil {
			t.Fatal(err)
		}
		fast, slow, none := newRecorder(), newRecorder(), newRecorder()
		inf.AddEventHandler(fast, informer.HandlerOptions{ResyncPeriod: 10 * time.Second})
		inf.AddEventHandler(slow, informer.HandlerOptions{ResyncPeriod: 30 * time.Second})
		inf.AddEventHandler(none, informer.HandlerOptions{})
		stop := runInformer(t, inf)
		time.Sleep(65 * time.Second) // fake time: ticks at 10s..60s
		synctest.Wait()
		stop()
		for _, c := range []struct {
			name string
			r    *recorder
			want int
		}{{"10s", fast, 6 * 3}, {"30s", slow, 2 * 3}, {"none", none, 0}} {
			if c.r.syncs != c.want || len(c.r.errs) > 0 {
				t.Errorf("handler %s: %d resync updates, want %d (errs %v)", c.name, c.r.syncs, c.want, c.r.errs)
			}
		}
	})
}

// runInformer runs inf until the function it returns, which stops it and
// waits for Run to return.
func runInformer(t *testing.T, inf *informer.Informer[U]) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { inf.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// syncsOf is the resync updates r has handled.
func syncsOf(r *recorder) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncs
}

// TestResyncWhileHandlersComeAndGo: handlers added and removed more often
// than a handler's resync period neither delay nor starve its resyncs
// (each change used to start the period again), and a handler with a
// shorter period brings the next tick forward.
func TestResyncWhileHandlersComeAndGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer()
		seed(srv, 3)
		inf, err := informer.New[U](srv, informer.Options[U]{Reflector: fastOpts(false, 0)})
		if err != nil {
			t.Fatal(err)
		}
		steady, slow, late := newRecorder(), newRecorder(), newRecorder()
		inf.AddEventHandler(steady, informer.HandlerOptions{ResyncPeriod: 10 * time.Second})
		stop := runInformer(t, inf)
		for range 16 { // fake time: a handler comes and goes every 4s, to 64s
			time.Sleep(4 * time.Second)
			reg, err := inf.AddEventHandler(newRecorder(), informer.HandlerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			reg.Remove()
		}
		time.Sleep(time.Second) // 65s: ticks at 10s..60s
		synctest.Wait()
		steadyAt65 := syncsOf(steady)
		// A 60s handler changes nothing (the next tick stays at 70s); a
		// 3s one added at 71s brings the tick after 70s forward from 80s
		// to 74s.
		inf.AddEventHandler(slow, informer.HandlerOptions{ResyncPeriod: 60 * time.Second})
		time.Sleep(6 * time.Second) // 71s
		inf.AddEventHandler(late, informer.HandlerOptions{ResyncPeriod: 3 * time.Second})
		time.Sleep(2 * time.Second) // 73s
		synctest.Wait()
		lateAt73 := syncsOf(late)
		time.Sleep(1500 * time.Millisecond) // 74.5s
		synctest.Wait()
		stop()
		for _, c := range []struct {
			name      string
			got, want int
		}{
			{"10s handler at 65s", steadyAt65, 6 * 3},
			{"10s handler at 74.5s", steady.syncs, 7 * 3},
			{"3s handler at 73s", lateAt73, 0},
			{"3s handler at 74.5s", late.syncs, 3},
			{"60s handler at 74.5s", slow.syncs, 0},
		} {
			if c.got != c.want {
				t.Errorf("%s: %d resync updates, want %d", c.name, c.got, c.want)
			}
		}
		for _, r := range []*recorder{steady, slow, late} {
			if len(r.errs) > 0 {
				t.Errorf("errors %v", r.errs)
			}
		}
	})
}

func TestTransformDropManagedFields(t *testing.T) {
	srv := newFakeServer()
	srv.mu.Lock()
	o := newObj("ns", "mf", nil)
	o.SetNested([]any{map[string]any{"manager": "kubectl"}}, "metadata", "managedFields")
	srv.writeLocked("ADDED", o)
	srv.mu.Unlock()
	inf, _ := informer.New[U](srv, informer.Options[U]{Transform: informer.DropManagedFields, Reflector: fastOpts(true, 0)})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { inf.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if !informer.WaitForCacheSync(ctx, inf.HasSynced) {
		t.Fatal("no sync")
	}
	got, ok := inf.Lister().GetByKey(object.NewKey("ns", "mf"))
	if !ok {
		t.Fatal("missing")
	}
	if _, has := got.Nested("metadata", "managedFields"); has {
		t.Fatal("managedFields kept")
	}
}

// TestTransformErrorSkipsOneWatchEvent: as client-go's reflector, a watch
// event whose Transform fails is skipped and the watch goes on (it used
// to relist, whose list failed on the same object, forever: no other
// object's change was stored again); a deletion whose Transform fails is
// still delivered, with the object as it came.
func TestTransformErrorSkipsOneWatchEvent(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 2)
	inf, err := informer.New[U](srv, informer.Options[U]{Reflector: fastOpts(false, 0), Transform: func(u U) (U, error) {
		if u.GetLabels()["bad"] == "true" {
			return u, errors.New("cannot transform")
		}
		return u, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 16)
	inf.AddEventHandler(informer.HandlerFuncs[U]{
		AddFunc: func(o U, initial bool) {
			if !initial {
				events <- "add " + o.GetName() + " " + o.GetLabels()["bad"]
			}
		},
		UpdateFunc: func(_, o U) { events <- "update " + o.GetName() + " " + o.GetLabels()["bad"] },
		DeleteFunc: func(o U, _ bool) { events <- "delete " + o.GetName() + " " + o.GetLabels()["bad"] },
	}, informer.HandlerOptions{})
	defer runInformer(t, inf)()
	if !informer.WaitForCacheSync(t.Context(), inf.HasSynced) {
		t.Fatal("no sync")
	}
	srv.mu.Lock()
	lists := srv.listCalls
	srv.mu.Unlock()
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %q, want %q", got, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("no event in a minute, want %q", want)
		}
	}
	srv.upsert("ns", "bad", map[string]string{"bad": "true"})
	srv.upsert("ns", "good", nil)
	expect("add good ") // events come in order: bad's was skipped
	srv.upsert("ns", "good", map[string]string{"bad": "true"})
	srv.upsert("ns", "marker", nil)
	expect("add marker ")
	if _, ok := inf.Lister().Get("ns", "bad"); ok {
		t.Error("an object whose Transform failed was stored")
	}
	if got, _ := inf.Lister().Get("ns", "good"); got.GetLabels()["bad"] != "" {
		t.Errorf("good stored as %v", got.GetLabels())
	}
	srv.remove("ns", "good")
	expect("delete good true")
	if _, ok := inf.Lister().Get("ns", "good"); ok {
		t.Error("a deleted object stayed in the store")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.listCalls != lists {
		t.Errorf("%d lists after the sync, want none", srv.listCalls-lists)
	}
}

// TestAddIndexersAfterRun: as client-go's informer allows (and
// controller-runtime's IndexField needs), an index added to a running,
// synced informer indexes the objects it holds, and those that come later.
func TestAddIndexersAfterRun(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 3)
	h := startHarness(t, srv, fastOpts(false, 0))
	h.mustConverge()
	byName := func(o U) []string { return []string{"name=" + o.GetName()} }
	if err := h.inf.AddIndexers(informer.Indexers[U]{"byName": byName}); err != nil {
		t.Fatal(err)
	}
	if err := h.inf.AddIndexers(informer.Indexers[U]{"byName": byName}); !errors.Is(err, informer.ErrIndexerConflict) {
		t.Fatalf("the same name again: %v", err)
	}
	for _, name := range h.inf.Lister().ListKeys() {
		o, _ := h.inf.Lister().GetByKey(name)
		got, err := h.inf.Lister().ByIndex("byName", "name="+o.GetName())
		if err != nil || len(got) != 1 || got[0] != o {
			t.Fatalf("ByIndex(%s) = %v, %v", o.GetName(), got, err)
		}
	}
	srv.upsert("ns", "later", nil)
	h.mustConverge()
	if got, _ := h.inf.Lister().ByIndex("byName", "name=later"); len(got) != 1 {
		t.Fatalf("an object stored after AddIndexers: %v", got)
	}
}

// TestByIndexReadsOneState: every object ByIndex returns has the value
// looked up, while another goroutine keeps changing it (the index and the
// objects used to be read under two locks, and an update in between
// returned objects that no longer matched).
func TestByIndexReadsOneState(t *testing.T) {
	s, err := informer.NewStore[U](nil)
	if err != nil {
		t.Fatal(err)
	}
	one, two := newObj("ns", "a", map[string]string{"x": "1"}), newObj("ns", "a", map[string]string{"x": "2"})
	s.Update(one)
	if _, err := s.ByIndex(informer.IndexLabel, "x=1"); err != nil { // built
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if i%2 == 0 {
				s.Update(two)
			} else {
				s.Update(one)
			}
		}
	})
	defer wg.Wait()
	defer close(done)
	for range 20000 {
		got, _ := s.ByIndex(informer.IndexLabel, "x=1")
		for _, o := range got {
			if o.GetLabels()["x"] != "1" {
				t.Fatalf("ByIndex(x=1) returned an object labelled x=%s", o.GetLabels()["x"])
			}
		}
	}
}
