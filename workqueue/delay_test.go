package workqueue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// runQueue runs q.Run for the rest of the test.
func runQueue[T comparable](t *testing.T, q *Queue[T]) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- q.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestAddAfterDeliversInReadyOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Config[string]{})
		runQueue(t, q)
		start := time.Now()
		q.AddAfter("c", 30*time.Millisecond)
		q.AddAfter("a", 10*time.Millisecond)
		q.AddAfter("b", 20*time.Millisecond)
		synctest.Wait()
		if q.Len() != 0 {
			t.Fatalf("Len = %d before any delay passed, want 0", q.Len())
		}
		for _, want := range []struct {
			item string
			at   time.Duration
		}{{"a", 10 * time.Millisecond}, {"b", 20 * time.Millisecond}, {"c", 30 * time.Millisecond}} {
			got, _ := q.Get()
			if got != want.item {
				t.Fatalf("Get = %q, want %q", got, want.item)
			}
			if at := time.Since(start); at != want.at {
				t.Fatalf("%q delivered at %v, want %v", got, at, want.at)
			}
			q.Done(got)
		}
	})
}

func TestAddAfterDuplicateKeepsEarliest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Config[string]{})
		runQueue(t, q)
		start := time.Now()
		q.AddAfter("x", time.Second)
		q.AddAfter("x", 100*time.Millisecond) // earlier: wins
		q.AddAfter("x", 5*time.Second)        // later: ignored
		got, _ := q.Get()
		if got != "x" || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("got %q at %v, want x at 100ms", got, time.Since(start))
		}
		q.Done(got)
		time.Sleep(10 * time.Second) // fake time: let every old deadline pass
		synctest.Wait()
		if q.Len() != 0 {
			t.Fatalf("Len = %d: a duplicate AddAfter was delivered twice", q.Len())
		}
	})
}

func TestAddAfterNonPositiveIsAdd(t *testing.T) {
	q := New(Config[string]{}) // no Run needed
	q.AddAfter("now", 0)
	q.AddAfter("past", -time.Second)
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want 2", q.Len())
	}
}

func TestAddAfterWaitsForRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Config[string]{})
		q.AddAfter("x", time.Millisecond)
		time.Sleep(time.Second)
		if q.Len() != 0 {
			t.Fatal("a delayed item arrived without Run")
		}
		runQueue(t, q)
		got, _ := q.Get()
		if got != "x" {
			t.Fatalf("Get = %q, want x", got)
		}
	})
}

func TestRunReturnsOnShutDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Config[string]{})
		q.AddAfter("x", time.Hour)
		errc := make(chan error, 1)
		go func() { errc <- q.Run(context.Background()) }()
		synctest.Wait()
		q.ShutDown()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		q.AddAfter("y", time.Millisecond) // ignored after shutdown
	})
}

func TestAddRateLimitedBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Config[string]{RateLimiter: NewExponentialBackoff[string](10*time.Millisecond, time.Second)})
		runQueue(t, q)
		for i, want := range []time.Duration{10, 20, 40, 80} {
			start := time.Now()
			q.AddRateLimited("k")
			got, _ := q.Get()
			if d := time.Since(start); d != want*time.Millisecond {
				t.Fatalf("retry %d of %q after %v, want %v", i, got, d, want*time.Millisecond)
			}
			q.Done(got)
		}
		if n := q.NumRequeues("k"); n != 4 {
			t.Fatalf("NumRequeues = %d, want 4", n)
		}
		q.Forget("k")
		if n := q.NumRequeues("k"); n != 0 {
			t.Fatalf("NumRequeues after Forget = %d, want 0", n)
		}
	})
}
