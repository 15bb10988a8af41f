package client

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/wire"
)

func TestRateLimitBurstThenWaits(t *testing.T) {
	var served atomic.Int32
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	clk := newFakeClock(false)
	c := newTestClientClock(t, srv, clk, func(cfg *Config) { cfg.QPS, cfg.Burst = 2, 3 })
	get := func() error {
		resp, err := c.Do(ctxT(t), http.MethodGet, "/", nil, nil)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	// The burst goes through without waiting.
	for range 3 {
		if err := get(); err != nil {
			t.Fatal(err)
		}
	}
	if len(clk.slept) != 0 || served.Load() != 3 {
		t.Fatalf("burst: %d waits, %d served", len(clk.slept), served.Load())
	}
	// The fourth waits one token's time (1/QPS) before it is sent.
	done := make(chan error, 1)
	go func() { done <- get() }()
	if d := <-clk.slept; d != 500*time.Millisecond {
		t.Fatalf("waited %v, want 500ms", d)
	}
	if served.Load() != 3 {
		t.Fatal("request sent before its token")
	}
	clk.Advance(500 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if served.Load() != 4 {
		t.Fatalf("served %d", served.Load())
	}
	// A wait is abandoned with the request's context, and its token given back.
	ctx, cancel := context.WithCancel(ctxT(t))
	go func() {
		_, err := c.Do(ctx, http.MethodGet, "/", nil, nil)
		done <- err
	}()
	<-clk.slept
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || served.Load() != 4 {
		t.Fatalf("cancelled wait: %v, served %d", err, served.Load())
	}
	// A wait that cannot end before the deadline fails at once.
	dctx, dcancel := context.WithDeadline(ctxT(t), clk.Now().Add(-time.Second))
	defer dcancel()
	if _, err := c.Do(dctx, http.MethodGet, "/", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
}

func TestRateLimitDefaultsAndOff(t *testing.T) {
	l := newRateLimiter(0, 0, realClock{})
	if l.lim == nil || l.lim.Limit() != 5 || l.lim.Burst() != 10 {
		t.Fatalf("defaults: %v %v", l.lim.Limit(), l.lim.Burst())
	}
	if newRateLimiter(-1, 0, realClock{}).lim != nil {
		t.Fatal("negative QPS did not disable rate limiting")
	}
}

func TestRetryAfterOnGet(t *testing.T) {
	var calls atomic.Int32
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch {
		case r.URL.Path == "/always":
			w.Header().Set("Retry-After", "1")
			writeStatus(w, wireTooMany())
		case n == 1:
			w.Header().Set("Retry-After", "2")
			writeStatus(w, wireTooMany())
		case n == 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(503)
		default:
			_, _ = w.Write([]byte(`{"ok":true}`))
		}
	}))
	clk := newFakeClock(true)
	c := newTestClientClock(t, srv, clk, nil)
	var out struct{ OK bool }
	if err := c.GetJSON(ctxT(t), "/x", &out); err != nil || !out.OK {
		t.Fatalf("GetJSON: %v %+v", err, out)
	}
	if calls.Load() != 3 || <-clk.slept != 2*time.Second || <-clk.slept != time.Second {
		t.Fatalf("calls %d", calls.Load())
	}

	// Writes are retried too, as client-go retries them.
	calls.Store(0)
	resp, err := c.Do(ctxT(t), http.MethodPost, "/x", nil, []byte(`{}`))
	if err != nil || calls.Load() != 3 {
		t.Fatalf("POST: %v after %d calls", err, calls.Load())
	}
	_ = resp.Body.Close()
	// Retries are bounded; the last error is returned.
	calls.Store(10)
	err = c.GetJSON(ctxT(t), "/always", &out)
	st, _ := statusOf(err)
	if !IsTooManyRequests(err) || calls.Load() != 10+maxRetries+1 || st.Details == nil || st.Details.RetryAfterSeconds != 1 {
		t.Fatalf("bounded retries: %v after %d calls", err, calls.Load()-10)
	}
}

func wireTooMany() *wire.Status { return wire.NewTooManyRequests(1) }
