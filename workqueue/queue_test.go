package workqueue

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// mustGet gets an item that the test knows is queued.
func mustGet[T comparable](t *testing.T, q *Queue[T]) T {
	t.Helper()
	if q.Len() == 0 {
		t.Fatalf("Get on an empty queue would block")
	}
	item, shutdown := q.Get()
	if shutdown {
		t.Fatalf("Get: unexpected shutdown")
	}
	return item
}

func TestQueueDedupsQueuedItems(t *testing.T) {
	q := New(Config[string]{})
	q.Add("a")
	q.Add("b")
	q.Add("a")
	if got := q.Len(); got != 2 {
		t.Fatalf("Len = %d, want 2", got)
	}
	if got := mustGet(t, q); got != "a" {
		t.Fatalf("first Get = %q, want a", got)
	}
	if got := mustGet(t, q); got != "b" {
		t.Fatalf("second Get = %q, want b", got)
	}
	if q.Len() != 0 {
		t.Fatalf("Len = %d after draining, want 0", q.Len())
	}
}

func TestQueueReAddWhileProcessingRunsOnceMoreAfterDone(t *testing.T) {
	q := New(Config[string]{})
	q.Add("a")
	item := mustGet(t, q)
	q.Add("a")
	q.Add("a")
	if got := q.Len(); got != 0 {
		t.Fatalf("Len = %d while a is processing, want 0 (not handed out twice)", got)
	}
	q.Done(item)
	if got := q.Len(); got != 1 {
		t.Fatalf("Len = %d after Done, want 1", got)
	}
	q.Done(mustGet(t, q))
	if got := q.Len(); got != 0 {
		t.Fatalf("Len = %d, want 0: the re-adds must collapse into one", got)
	}
	q.Done("a") // Done of an idle item is a no-op
	q.Done("never-added")
}

func TestQueueItemNeverHandedToTwoWorkers(t *testing.T) {
	q := New(Config[int]{})
	const workers, keys, rounds = 8, 50, 200
	var (
		mu       sync.Mutex
		inFlight = map[int]bool{}
		handled  int
	)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if inFlight[k] {
					t.Errorf("key %d handed to two workers at once", k)
				}
				inFlight[k] = true
				handled++
				mu.Unlock()
				runtime.Gosched() // widen the window a second hand-out would hit
				mu.Lock()
				inFlight[k] = false
				mu.Unlock()
				q.Done(k)
			}
		})
	}
	var producers sync.WaitGroup
	for p := range 4 {
		producers.Go(func() {
			for r := range rounds {
				q.Add((p*rounds + r) % keys)
			}
		})
	}
	producers.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling a real condition, with a deadline
	}
	q.ShutDownWithDrain()
	wg.Wait()
	if handled < keys {
		t.Fatalf("handled %d items, want at least %d", handled, keys)
	}
}

func TestQueueShutDownWakesBlockedGetters(t *testing.T) {
	q := New(Config[string]{})
	results := make(chan bool)
	for range 3 {
		go func() {
			_, shutdown := q.Get()
			results <- shutdown
		}()
	}
	q.ShutDown()
	for range 3 {
		if !<-results {
			t.Fatal("blocked Get returned an item after ShutDown")
		}
	}
	if !q.ShuttingDown() {
		t.Fatal("ShuttingDown = false after ShutDown")
	}
	q.Add("late")
	if q.Len() != 0 {
		t.Fatal("Add after ShutDown queued an item")
	}
	if _, shutdown := q.Get(); !shutdown {
		t.Fatal("Get after ShutDown did not report shutdown")
	}
}

func TestQueueShutDownDropsBacklog(t *testing.T) {
	q := New(Config[string]{})
	q.Add("a")
	q.Add("b")
	q.ShutDown()
	if q.Len() != 0 {
		t.Fatalf("Len = %d after ShutDown, want 0", q.Len())
	}
	if _, shutdown := q.Get(); !shutdown {
		t.Fatal("Get handed out backlog after ShutDown")
	}
}

func TestQueueShutDownWithDrainWaitsForInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Config[string]{})
		q.Add("a")
		q.Add("b")
		a := mustGet(t, q)
		b := mustGet(t, q)
		q.Add("a") // dirty while processing: dropped by the shutdown

		drained := make(chan struct{})
		go func() {
			q.ShutDownWithDrain()
			close(drained)
		}()
		synctest.Wait() // the drain is now blocked, or has (wrongly) returned
		q.Done(a)
		synctest.Wait()
		select {
		case <-drained:
			t.Fatal("ShutDownWithDrain returned while b was still processing")
		default:
		}
		q.Done(b)
		<-drained
		if q.Len() != 0 {
			t.Fatalf("Len = %d after drain, want 0", q.Len())
		}
		if _, shutdown := q.Get(); !shutdown {
			t.Fatal("re-added a was handed out after shutdown")
		}
	})
}

func TestQueueFairnessHotKeyKeepsItsPlace(t *testing.T) {
	q := New(Config[string]{})
	q.Add("hot")
	for i := range 5 {
		q.Add(fmt.Sprint("cold-", i))
		q.Add("hot") // re-add while queued: keeps its first place
	}
	want := []string{"hot", "cold-0", "cold-1", "cold-2", "cold-3", "cold-4"}
	for i, w := range want {
		got := mustGet(t, q)
		if got != w {
			t.Fatalf("Get #%d = %q, want %q", i, got, w)
		}
		q.Done(got)
		if got == "hot" {
			q.Add("hot") // a hot key re-added after processing goes to the back
		}
	}
	if got := mustGet(t, q); got != "hot" {
		t.Fatalf("last Get = %q, want hot", got)
	}
}

func TestQueueLowPriorityRanksBehindNormal(t *testing.T) {
	q := New(Config[string]{})
	q.AddLowPriority("resync-1")
	q.AddLowPriority("resync-2")
	q.Add("event-1")
	q.Add("event-2")
	want := []string{"event-1", "event-2", "resync-1", "resync-2"}
	for i, w := range want {
		if got := mustGet(t, q); got != w {
			t.Fatalf("Get #%d = %q, want %q", i, got, w)
		}
	}
}

func TestQueueLowPriorityPromotedByNormalAdd(t *testing.T) {
	q := New(Config[string]{})
	q.AddLowPriority("x")
	q.Add("a")
	q.Add("x") // promoted: now behind a at normal priority
	q.AddLowPriority("a")
	if got := q.Len(); got != 2 {
		t.Fatalf("Len = %d, want 2", got)
	}
	for i, w := range []string{"a", "x"} {
		if got := mustGet(t, q); got != w {
			t.Fatalf("Get #%d = %q, want %q", i, got, w)
		}
	}
	// The stale low entry of x must not hand x out again.
	q.Add("b")
	if got := mustGet(t, q); got != "b" {
		t.Fatalf("Get = %q, want b", got)
	}
	if q.Len() != 0 {
		t.Fatalf("Len = %d, want 0", q.Len())
	}
}

func TestQueueLowPriorityCannotStarve(t *testing.T) {
	const every = 3
	q := New(Config[int]{LowPriorityEvery: every})
	q.AddLowPriority(-1)
	// A flood of normal items that never ends: every Get is followed by a
	// new normal Add.
	next := 0
	for range every + 1 {
		q.Add(next)
		next++
	}
	for i := 0; ; i++ {
		got := mustGet(t, q)
		q.Done(got)
		if got == -1 {
			if i != every {
				t.Fatalf("low item handed out as #%d, want #%d", i, every)
			}
			return
		}
		if i > every {
			t.Fatalf("low item starved past %d normal hand-outs", every)
		}
		q.Add(next)
		next++
	}
}

func TestQueueLenExcludesProcessing(t *testing.T) {
	q := New(Config[string]{})
	q.Add("a")
	q.Add("b")
	_ = mustGet(t, q)
	if got := q.Len(); got != 1 {
		t.Fatalf("Len = %d, want 1", got)
	}
}

// TestQueuePromotionsLeaveNoStaleEntries: resyncs (low) promoted by events
// (normal) must not pile up stale low entries while no low item waits.
func TestQueuePromotionsLeaveNoStaleEntries(t *testing.T) {
	q := New(Config[int]{})
	for i := range 1000 {
		q.AddLowPriority(i)
		q.Add(i) // promoted: the low entry is stale
	}
	if n := q.low.len(); n != 0 {
		t.Fatalf("low fifo holds %d stale entries, want 0", n)
	}
	for want := range 1000 {
		if got := mustGet(t, q); got != want {
			t.Fatalf("Get = %d, want %d", got, want)
		}
	}
}
