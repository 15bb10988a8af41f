package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// calls records when a fake reconciler was called for each key.
type calls struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (c *calls) record(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[string][]time.Time{}
	}
	c.at[key] = append(c.at[key], time.Now())
	return len(c.at[key])
}

func (c *calls) times(key string) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at[key]...)
}

// start runs c until the test ends (or stop is called) and returns stop,
// which cancels Run and returns its error.
func start(t *testing.T, c *Controller) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-errc })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func newController(t *testing.T, r Reconciler, opts Options) (*Controller, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	c, err := New(r, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, reg
}

func counter(t *testing.T, reg *prometheus.Registry, metric, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			match := result == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					match = true
				}
			}
			if match {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestConvergesAfterErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c calls
		done := make(chan struct{})
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			if n := c.record(key); n <= 3 {
				return Result{}, errors.New("not yet")
			}
			close(done)
			return Result{}, nil
		})
		ctrl, reg := newController(t, r, Options{Name: "converge", Workers: 2})
		stop := start(t, ctrl)
		ctrl.Enqueue("ns/a")
		<-done
		times := c.times("ns/a")
		// Backoff between attempts: 5ms, 10ms, 20ms.
		for i, want := range []time.Duration{5, 10, 20} {
			if got := times[i+1].Sub(times[i]); got != want*time.Millisecond {
				t.Errorf("wait before attempt %d = %v, want %v", i+2, got, want*time.Millisecond)
			}
		}
		synctest.Wait()
		if n := ctrl.queue.NumRequeues("ns/a"); n != 0 {
			t.Errorf("NumRequeues after success = %d, want 0 (forgotten)", n)
		}
		if err := stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := counter(t, reg, "controller_reconcile_total", resultError); got != 3 {
			t.Errorf("error count = %v, want 3", got)
		}
		if got := counter(t, reg, "controller_reconcile_total", resultSuccess); got != 1 {
			t.Errorf("success count = %v, want 1", got)
		}
	})
}

func TestRequeueAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c calls
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			if c.record(key) == 1 {
				return Result{RequeueAfter: 7 * time.Second}, nil
			}
			return Result{}, nil
		})
		ctrl, _ := newController(t, r, Options{})
		start(t, ctrl)
		ctrl.Enqueue("k")
		time.Sleep(time.Minute)
		synctest.Wait()
		times := c.times("k")
		if len(times) != 2 || times[1].Sub(times[0]) != 7*time.Second {
			t.Fatalf("calls at %v, want two calls 7s apart", times)
		}
	})
}

func TestRequeueIsRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c calls
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			return Result{Requeue: c.record(key) < 3}, nil
		})
		ctrl, reg := newController(t, r, Options{})
		start(t, ctrl)
		ctrl.Enqueue("k")
		time.Sleep(time.Minute)
		synctest.Wait()
		times := c.times("k")
		if len(times) != 3 || times[1].Sub(times[0]) != 5*time.Millisecond || times[2].Sub(times[1]) != 10*time.Millisecond {
			t.Fatalf("calls at %v, want 3 calls 5ms then 10ms apart", times)
		}
		if got := counter(t, reg, "controller_reconcile_total", resultRequeue); got != 2 {
			t.Errorf("requeue count = %v, want 2", got)
		}
	})
}

func TestTerminalErrorIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c calls
		cause := errors.New("spec is invalid")
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			c.record(key)
			return Result{}, TerminalError(cause)
		})
		ctrl, reg := newController(t, r, Options{})
		start(t, ctrl)
		ctrl.Enqueue("k")
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(c.times("k")); n != 1 {
			t.Fatalf("reconciled %d times, want 1", n)
		}
		if got := counter(t, reg, "controller_reconcile_total", resultTerminal); got != 1 {
			t.Errorf("terminal_error count = %v, want 1", got)
		}
	})
}

func TestTerminalErrorWrapping(t *testing.T) {
	cause := &customErr{"boom"}
	err := TerminalError(cause)
	if !errors.Is(err, ErrTerminal) || !IsTerminal(err) {
		t.Error("TerminalError does not match ErrTerminal")
	}
	if !errors.Is(err, cause) {
		t.Error("TerminalError hides its cause from errors.Is")
	}
	var ce *customErr
	if !errors.As(err, &ce) || ce != cause {
		t.Error("TerminalError hides its cause from errors.As")
	}
	if IsTerminal(cause) || IsTerminal(nil) {
		t.Error("a plain error is terminal")
	}
	if TerminalError(nil) != nil {
		t.Error("TerminalError(nil) != nil")
	}
	if wrapped := errors.Join(errors.New("ctx"), err); !IsTerminal(wrapped) {
		t.Error("a wrapped TerminalError is not terminal")
	}
	if !strings.Contains(err.Error(), "boom") {
		t.Errorf("message %q lost the cause", err.Error())
	}
}

type customErr struct{ msg string }

func (e *customErr) Error() string { return e.msg }

func TestMaxRetriesDropsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c calls
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			c.record(key)
			return Result{}, errors.New("always fails")
		})
		ctrl, _ := newController(t, r, Options{MaxRetries: 3})
		start(t, ctrl)
		ctrl.Enqueue("k")
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(c.times("k")); n != 4 {
			t.Fatalf("reconciled %d times, want 4 (first try + 3 retries)", n)
		}
		if n := ctrl.queue.NumRequeues("k"); n != 0 {
			t.Errorf("dropped key still has %d requeues counted", n)
		}
		// A new event brings it back, with a fresh retry budget.
		ctrl.Enqueue("k")
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(c.times("k")); n != 8 {
			t.Fatalf("reconciled %d times after re-enqueue, want 8", n)
		}
	})
}

// TestRequeueIsNoFailure: Result.Requeue does not use up the retries of
// errors (the queue's requeue count, which it raises, used to decide).
func TestRequeueIsNoFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c calls
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			switch n := c.record(key); {
			case n <= 4:
				return Result{Requeue: true}, nil
			case n <= 6:
				return Result{}, errors.New("transient")
			}
			return Result{}, nil
		})
		ctrl, _ := newController(t, r, Options{MaxRetries: 2})
		start(t, ctrl)
		ctrl.Enqueue("k")
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(c.times("k")); n != 7 {
			t.Fatalf("reconciled %d times, want 7 (4 requeues, 2 errors retried, then success)", n)
		}
	})
	// A Requeue between errors starts their count again: with one retry
	// allowed, error, requeue, error, requeue, error, success all run.
	synctest.Test(t, func(t *testing.T) {
		var c calls
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			switch n := c.record(key); {
			case n == 6:
				return Result{}, nil
			case n%2 == 0:
				return Result{Requeue: true}, nil
			}
			return Result{}, errors.New("transient")
		})
		ctrl, _ := newController(t, r, Options{MaxRetries: 1})
		start(t, ctrl)
		ctrl.Enqueue("k")
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(c.times("k")); n != 6 {
			t.Fatalf("reconciled %d times, want 6", n)
		}
	})
}

func TestPanicIsRecoveredAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c calls
		var logs strings.Builder
		var logMu sync.Mutex
		logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			if c.record(key) == 1 {
				panic("nil map somewhere")
			}
			return Result{}, nil
		})
		ctrl, reg := newController(t, r, Options{Logger: logger})
		start(t, ctrl)
		ctrl.Enqueue("k")
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(c.times("k")); n != 2 {
			t.Fatalf("reconciled %d times, want 2 (panic, then retry)", n)
		}
		if got := counter(t, reg, "controller_reconcile_panics_total", ""); got != 1 {
			t.Errorf("panics = %v, want 1", got)
		}
		if got := counter(t, reg, "controller_reconcile_total", resultPanic); got != 1 {
			t.Errorf("panic results = %v, want 1", got)
		}
		logMu.Lock()
		defer logMu.Unlock()
		if !strings.Contains(logs.String(), "nil map somewhere") || !strings.Contains(logs.String(), "worker.go") {
			t.Errorf("panic log lacks the value or the stack:\n%s", logs.String())
		}
	})
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan struct{})
		release := make(chan struct{})
		var ctxErrAtEnd atomic.Pointer[error]
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			if key == "slow" {
				close(entered)
				<-release
				err := ctx.Err()
				ctxErrAtEnd.Store(&err)
			}
			return Result{}, nil
		})
		ctrl, reg := newController(t, r, Options{Workers: 1})
		stop := start(t, ctrl)
		ctrl.Enqueue("slow")
		<-entered
		ctrl.Enqueue("queued") // behind the in-flight key: dropped at shutdown

		stopped := make(chan error, 1)
		go func() { stopped <- stop() }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Run returned while a reconcile was in flight")
		default:
		}
		close(release)
		if err := <-stopped; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if err := *ctxErrAtEnd.Load(); err != nil {
			t.Errorf("in-flight reconcile saw its context cancelled within the grace period: %v", err)
		}
		if got := counter(t, reg, "controller_reconcile_total", resultSuccess); got != 1 {
			t.Errorf("success count = %v, want 1 (the queued key is not started)", got)
		}
	})
}

func TestShutdownGracePeriodCancelsStragglers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan struct{})
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			close(entered)
			<-ctx.Done()
			return Result{}, ctx.Err()
		})
		ctrl, _ := newController(t, r, Options{ShutdownGracePeriod: 3 * time.Second})
		stop := start(t, ctrl)
		ctrl.Enqueue("stuck")
		<-entered
		begin := time.Now()
		if err := stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(begin); took != 3*time.Second {
			t.Fatalf("shutdown took %v, want the 3s grace period", took)
		}
	})
}

func TestRunWaitsForCacheSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var synced atomic.Bool
		var c calls
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			c.record(key)
			return Result{}, nil
		})
		ctrl, _ := newController(t, r, Options{HasSynced: []func() bool{func() bool { return true }, synced.Load}})
		start(t, ctrl)
		ctrl.Enqueue("k")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(c.times("k")); n != 0 {
			t.Fatalf("reconciled %d times before caches synced", n)
		}
		synced.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(c.times("k")); n != 1 {
			t.Fatalf("reconciled %d times after sync, want 1", n)
		}
	})
}

func TestRunNotSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctrl, _ := newController(t, ReconcilerFunc(func(context.Context, string) (Result, error) {
			return Result{}, nil
		}), Options{HasSynced: []func() bool{func() bool { return false }}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := ctrl.Run(ctx)
		if !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run = %v, want ErrNotSynced wrapping the deadline", err)
		}
		if err := ctrl.Run(context.Background()); !errors.Is(err, ErrAlreadyRunning) {
			t.Fatalf("second Run = %v, want ErrAlreadyRunning", err)
		}
	})
}

func TestLowPriorityResyncRunsAfterEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		r := ReconcilerFunc(func(ctx context.Context, key string) (Result, error) {
			mu.Lock()
			order = append(order, key)
			mu.Unlock()
			return Result{}, nil
		})
		ctrl, _ := newController(t, r, Options{})
		ctrl.EnqueueLowPriority("resync")
		ctrl.Enqueue("event-1")
		ctrl.Enqueue("event-2")
		start(t, ctrl)
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(order, ",") != "event-1,event-2,resync" {
			t.Fatalf("order = %v", order)
		}
	})
}

func TestMetricsShareRegisterer(t *testing.T) {
	reg := prometheus.NewRegistry()
	nop := ReconcilerFunc(func(context.Context, string) (Result, error) { return Result{}, nil })
	for _, name := range []string{"a", "b"} {
		if _, err := New(nop, Options{Name: name, Registerer: reg, Logger: quiet}); err != nil {
			t.Fatalf("New(%s): %v", name, err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() == "controller_reconcile_total" {
			n = len(f.GetMetric())
		}
	}
	if n != 12 {
		t.Fatalf("controller_reconcile_total series = %d, want 12 (6 results × 2 controllers)", n)
	}
}
