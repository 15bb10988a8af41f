package informer_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quiet is a logger for tests that expect errors.
var quiet = slog.New(slog.DiscardHandler)

// fastOpts makes retries quick so tests converge in milliseconds.
func fastOpts(streaming bool, pageSize int64) informer.ReflectorOptions {
	return informer.ReflectorOptions{
		Name:          "test",
		PageSize:      pageSize,
		StreamingList: streaming,
		Backoff:       informer.BackoffOptions{Initial: time.Millisecond, Max: 5 * time.Millisecond},
		Logger:        quiet,
	}
}

// harness runs an informer over a fakeServer with one recording handler.
type harness struct {
	t    testing.TB
	srv  *fakeServer
	inf  *informer.Informer[U]
	rec  *recorder
	reg  *informer.Registration[U]
	stop func()
}

func startHarness(t testing.TB, srv *fakeServer, ro informer.ReflectorOptions) *harness {
	t.Helper()
	return startHarnessLW(t, srv, srv, ro)
}

// startHarnessLW is startHarness with the informer listing and watching
// srv through lw.
func startHarnessLW(t testing.TB, srv *fakeServer, lw informer.ListerWatcher[U], ro informer.ReflectorOptions) *harness {
	t.Helper()
	inf, err := informer.New[U](lw, informer.Options[U]{Reflector: ro})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec, informer.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	h := &harness{t: t, srv: srv, inf: inf, rec: rec, reg: reg}
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
			h.stop = nil
		}
	})
	return h
}

func storeState(inf *informer.Informer[U]) map[string]string {
	out := map[string]string{}
	for _, o := range inf.Lister().List() {
		out[object.Key(o)] = o.GetResourceVersion()
	}
	return out
}

// converged polls, with a deadline, until the store and the handler both
// match the server, and reports the difference if they never do.
func (h *harness) converged() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		want := h.srv.state()
		got := storeState(h.inf)
		seen, errs := h.rec.snapshot()
		if len(errs) > 0 {
			return fmt.Errorf("handler saw an inconsistent sequence: %v", errs)
		}
		if maps.Equal(want, got) && maps.Equal(want, seen) && h.reg.HasSynced() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged:\n server  %v\n store   %v\n handler %v\n lastErr %v",
				want, got, seen, h.inf.LastSyncError())
		}
		time.Sleep(2 * time.Millisecond) // polling a real condition, with a deadline
	}
}

func (h *harness) mustConverge() {
	h.t.Helper()
	if err := h.converged(); err != nil {
		h.t.Fatal(err)
	}
}
