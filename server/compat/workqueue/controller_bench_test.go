package workqueue_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientgo "k8s.io/client-go/util/workqueue"

	"github.com/listwatch/listwatch/workqueue"
)

// ctrlQueue is what a controller's event handlers and workers call.
type ctrlQueue interface {
	Add(string)
	Get() (string, bool)
	Done(string)
	Forget(string)
}

// ctrlImpl starts a queue the way its controller would, and returns it with
// the function that stops it and waits for its goroutines.
type ctrlImpl struct {
	name  string
	start func() (ctrlQueue, func())
}

var ctrlImpls = []ctrlImpl{
	{"listwatch", func() (ctrlQueue, func()) {
		q := workqueue.New(workqueue.Config[string]{Name: "bench"})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- q.Run(ctx) }() // the delay pump, as controller.Run does
		return q, func() { q.ShutDown(); cancel(); <-errc }
	}},
	{"client-go", func() (ctrlQueue, func()) {
		// client-go's controllers use exactly this: the rate-limiting
		// queue with the default controller rate limiter.
		q := clientgo.NewTypedRateLimitingQueue(clientgo.DefaultTypedControllerRateLimiter[string]())
		return q, q.ShutDown
	}},
}

// benchPod is what the informer's store holds: a freshly decoded object
// per event.
type benchPod struct {
	key     string
	id      int
	version int64
	labels  map[string]string
}

// benchStatus is what a reconcile computes and keeps.
type benchStatus struct {
	key        string
	observed   int64
	conditions []string
}

// ctrlFixture is one run's informer store, event stream and bookkeeping.
type ctrlFixture struct {
	keys   []string
	labels map[string]string
	events []int   // key ids, in arrival order
	final  []int64 // each key's last version in events

	mu    sync.RWMutex
	store map[string]*benchPod // guarded by mu

	results   []*benchStatus // by key id; one worker at a time per key
	settled   []atomic.Bool  // by key id: reconciled at its final version
	remaining atomic.Int64   // keys not yet settled
	allDone   chan struct{}  // closed when remaining reaches zero
}

// newCtrlFixture builds n events. Keys come in windows of 8, each key
// updated 4 times within its window of 32 events and never again, so later
// updates of a key arrive while it is queued or being reconciled, as an
// informer's updates of a busy object do, and every key needs at least one
// reconcile: n/4 keys, at least n/4 reconciles.
func newCtrlFixture(n int) *ctrlFixture {
	nkeys := (n + 31) / 32 * 8
	f := &ctrlFixture{
		keys:    make([]string, nkeys),
		labels:  map[string]string{"app": "bench", "tier": "backend"},
		events:  make([]int, n),
		final:   make([]int64, nkeys),
		store:   make(map[string]*benchPod, nkeys),
		results: make([]*benchStatus, nkeys),
		settled: make([]atomic.Bool, nkeys),
		allDone: make(chan struct{}),
	}
	for i := range f.keys {
		f.keys[i] = "namespace-" + strconv.Itoa(i%37) + "/pod-" + strconv.Itoa(i)
	}
	touched := 0
	for i := range f.events {
		id := (i/32)*8 + i%8
		f.events[i] = id
		if f.final[id] == 0 {
			touched++
		}
		f.final[id]++
	}
	f.remaining.Store(int64(touched))
	return f
}

// emit is the informer: store the new object, then hand its key to the
// queue, one event at a time on one goroutine, as an informer's handler
// does.
func (f *ctrlFixture) emit(q ctrlQueue) {
	versions := make([]int64, len(f.keys))
	for _, id := range f.events {
		versions[id]++
		p := &benchPod{key: f.keys[id], id: id, version: versions[id], labels: f.labels}
		f.mu.Lock()
		f.store[p.key] = p
		f.mu.Unlock()
		q.Add(p.key)
	}
}

// worker is a controller worker: Get, reconcile, Forget, Done. It returns
// how many items it reconciled.
func (f *ctrlFixture) worker(q ctrlQueue, spin time.Duration) (n int64) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return n
		}
		n++
		f.reconcile(key, spin)
		q.Forget(key)
		q.Done(key)
	}
}

// reconcile reads the object from the store, computes and keeps a status
// (a map lookup and two allocations), and then spins for spin, standing in
// for the rest of the work.
func (f *ctrlFixture) reconcile(key string, spin time.Duration) {
	f.mu.RLock()
	p := f.store[key]
	f.mu.RUnlock()
	st := &benchStatus{key: p.key, observed: p.version, conditions: make([]string, 0, 2)}
	if p.labels["tier"] == "backend" {
		st.conditions = append(st.conditions, "Ready")
	}
	f.results[p.id] = st
	if spin > 0 {
		for start := time.Now(); time.Since(start) < spin; {
		}
	}
	if p.version == f.final[p.id] && f.settled[p.id].CompareAndSwap(false, true) {
		if f.remaining.Add(-1) == 0 {
			close(f.allDone)
		}
	}
}

// BenchmarkController is a controller's whole path: an informer emits b.N
// update events as fast as it can, over b.N/4 keys (each updated 4 times in
// quick succession, so duplicates arrive while the key is queued or being
// reconciled); workers Get, reconcile, Forget and Done. The clock stops
// when every key has been reconciled at its last version. ns/op is per
// event; events/s is the throughput to compare; cpu-ns/event, the
// process's CPU time per event, is steadier on a shared machine;
// reconciles/event shows how many events the deduplication absorbed.
//
// reconcile=lookup is a store lookup and two allocations (well under a
// microsecond: the queue's own cost weighs most); reconcile=2us adds a
// 2 µs spin. Each pair of sub-benchmarks (listwatch, client-go) runs back
// to back in one process; compare within a run:
//
//	go test -run '^$' -bench Controller -benchtime 300000x ./server/compat/workqueue/
func BenchmarkController(b *testing.B) {
	for _, rc := range []struct {
		name string
		spin time.Duration
	}{{"lookup", 0}, {"2us", 2 * time.Microsecond}} {
		for _, workers := range []int{1, 2, 4} {
			for _, impl := range ctrlImpls {
				name := "reconcile=" + rc.name + "/workers=" + strconv.Itoa(workers) + "/" + impl.name
				b.Run(name, func(b *testing.B) { benchController(b, impl, workers, rc.spin) })
			}
		}
	}
}

func benchController(b *testing.B, impl ctrlImpl, workers int, spin time.Duration) {
	f := newCtrlFixture(b.N)
	q, stop := impl.start()
	var reconciles atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { reconciles.Add(f.worker(q, spin)) })
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	f.emit(q)
	<-f.allDone
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	stop()
	wg.Wait()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/event")
	b.ReportMetric(float64(reconciles.Load())/float64(b.N), "reconciles/event")
}
