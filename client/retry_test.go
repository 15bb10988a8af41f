package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultServer answers the first `faults` requests with fault and every
// later one 200 {"ok":true}, recording each request's method, path and
// body.
type faultServer struct {
	faults int
	fault  func(w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex // guards seen
	seen []seenRequest
}

func (f *faultServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{method: r.Method, path: r.URL.Path, query: r.URL.Query(), body: body})
	n := len(f.seen)
	f.mu.Unlock()
	if n <= f.faults {
		f.fault(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}`))
}

func (f *faultServer) attempts() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// answer is a fault that writes code with Retry-After set to retryAfter
// (none when "").
func answer(code int, retryAfter string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":` + strconv.Itoa(code) + `}`))
	}
}

// resetConn is a fault that drops the connection with a TCP RST (the
// client reads "connection reset by peer"); closeConn closes it cleanly
// (the client reads EOF). Both need HTTP/1.1.
func resetConn(w http.ResponseWriter, _ *http.Request) { hijackClose(w, true) }
func closeConn(w http.ResponseWriter, _ *http.Request) { hijackClose(w, false) }

func hijackClose(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// startFaults serves f over plain HTTP/1.1 on 127.0.0.1 and returns a
// Client for it on clk, with rate limiting off.
func startFaults(t *testing.T, f *faultServer, clk clock) *Client {
	t.Helper()
	return startFaultsTimeout(t, f, clk, 0)
}

// startFaultsTimeout is startFaults with Config.Timeout set to timeout.
func startFaultsTimeout(t *testing.T, f *faultServer, clk clock, timeout time.Duration) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := newClient(&Config{Host: srv.URL, QPS: -1, Timeout: timeout}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// drained returns the durations slept so far.
func drained(clk *fakeClock) []time.Duration {
	var out []time.Duration
	for {
		select {
		case d := <-clk.slept:
			out = append(out, d)
		default:
			return out
		}
	}
}

// TestRetryRule: which answers are retried, for which requests, after how
// long, as client-go's IsNextRetry/checkWait decide; the same with a
// Config.Timeout, whose per-attempt context must not make a dropped
// connection look like the caller's end (a GET whose connection the
// server closed under load was not retried then).
func TestRetryRule(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name     string
		method   string
		watch    bool
		fault    func(http.ResponseWriter, *http.Request)
		attempts int // 2: retried once; 1: not retried
		slept    []time.Duration
	}{
		{"GET 429", http.MethodGet, false, answer(429, "2"), 2, []time.Duration{2 * s}},
		{"POST 429", http.MethodPost, false, answer(429, "1"), 2, []time.Duration{s}},
		{"PUT 503", http.MethodPut, false, answer(503, "3"), 2, []time.Duration{3 * s}},
		{"PATCH 500 Retry-After 0", http.MethodPatch, false, answer(500, "0"), 2, []time.Duration{0}},
		{"DELETE 504", http.MethodDelete, false, answer(504, "1"), 2, []time.Duration{s}},
		{"watch 429", http.MethodGet, true, answer(429, "1"), 2, []time.Duration{s}},
		{"watch 503", http.MethodGet, true, answer(503, "4"), 2, []time.Duration{4 * s}},
		{"negative Retry-After: at once", http.MethodGet, false, answer(503, "-5"), 2, []time.Duration{0}},
		{"POST 500 without Retry-After", http.MethodPost, false, answer(500, ""), 1, nil},
		{"GET 503 without Retry-After", http.MethodGet, false, answer(503, ""), 1, nil},
		{"GET 503 Retry-After as a date", http.MethodGet, false, answer(503, "Wed, 21 Oct 2026 07:28:00 GMT"), 1, nil},
		{"GET 404 with Retry-After", http.MethodGet, false, answer(404, "1"), 1, nil},
		{"GET 409 with Retry-After", http.MethodGet, false, answer(409, "1"), 1, nil},
		{"GET connection reset", http.MethodGet, false, resetConn, 2, []time.Duration{s}},
		{"GET EOF", http.MethodGet, false, closeConn, 2, []time.Duration{s}},
		{"watch EOF", http.MethodGet, true, closeConn, 2, []time.Duration{s}},
		{"POST connection reset", http.MethodPost, false, resetConn, 1, nil},
		{"PUT EOF", http.MethodPut, false, closeConn, 1, nil},
		{"DELETE connection reset", http.MethodDelete, false, resetConn, 1, nil},
	} {
		for _, timeout := range []time.Duration{0, time.Minute} {
			t.Run(fmt.Sprintf("%s/timeout=%v", tc.name, timeout), func(t *testing.T) {
				f := &faultServer{faults: 1, fault: tc.fault}
				clk := newFakeClock(true)
				c := startFaultsTimeout(t, f, clk, timeout)
				var body []byte
				if tc.method != http.MethodGet {
					body = []byte(`{"n":1}`)
				}
				resp, err := c.send(ctxT(t), request{method: tc.method, path: "/x", body: body, watch: tc.watch})
				if resp != nil {
					_ = resp.Body.Close()
				}
				seen := f.attempts()
				if len(seen) != tc.attempts {
					t.Fatalf("%d attempts, want %d (err %v)", len(seen), tc.attempts, err)
				}
				if (err == nil) != (tc.attempts == 2) {
					t.Fatalf("err %v after %d attempts", err, len(seen))
				}
				for _, r := range seen {
					if r.method != tc.method || !bytes.Equal(r.body, body) {
						t.Fatalf("attempt %s with body %q, want %s %q", r.method, r.body, tc.method, body)
					}
				}
				if got := drained(clk); !equalDurations(got, tc.slept) {
					t.Fatalf("slept %v, want %v", got, tc.slept)
				}
			})
		}
	}
}

// TestRetryNotAfterTimeout: an attempt that Config.Timeout ends is not
// retried, a GET neither: the timeout is the caller's bound, as client-go's.
func TestRetryNotAfterTimeout(t *testing.T) {
	hang := func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	f := &faultServer{faults: 1000, fault: hang}
	clk := newFakeClock(true)
	c := startFaultsTimeout(t, f, clk, 50*time.Millisecond)
	_, err := c.send(ctxT(t), request{method: http.MethodGet, path: "/x"})
	if !errors.Is(err, context.DeadlineExceeded) || len(f.attempts()) != 1 {
		t.Fatalf("err %v after %d attempts", err, len(f.attempts()))
	}
	if got := drained(clk); len(got) != 0 {
		t.Fatalf("slept %v", got)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRetryBounded: client-go's default of 10 retries, so 11 attempts,
// then the last error.
func TestRetryBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		fault  func(http.ResponseWriter, *http.Request)
		check  func(error) bool
	}{
		{"429", http.MethodPost, answer(429, "1"), IsTooManyRequests},
		{"connection reset", http.MethodGet, resetConn, isConnectionReset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &faultServer{faults: 1000, fault: tc.fault}
			clk := newFakeClock(true)
			c := startFaults(t, f, clk)
			_, err := c.send(ctxT(t), request{method: tc.method, path: "/x"})
			if n := len(f.attempts()); n != 11 || !tc.check(err) {
				t.Fatalf("%d attempts, error %v", n, err)
			}
			if got := drained(clk); len(got) != 10 || got[9] != time.Second {
				t.Fatalf("slept %v", got)
			}
		})
	}
}

// TestRetryContextAndLimiter: every retry waits on the rate limiter, and
// a context that ends during the server's delay ends the request with
// its error, naming the error that made it wait.
func TestRetryContextAndLimiter(t *testing.T) {
	t.Run("limiter", func(t *testing.T) {
		f := &faultServer{faults: 2, fault: answer(429, "0")}
		clk := newFakeClock(true)
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		c, err := newClient(&Config{Host: srv.URL, QPS: 1, Burst: 1}, clk)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.CloseIdleConnections)
		if err := c.GetJSON(ctxT(t), "/x", &struct{}{}); err != nil {
			t.Fatal(err)
		}
		// Retry-After 0, then a second for the next token; twice.
		want := []time.Duration{0, time.Second, 0, time.Second}
		if got := drained(clk); len(f.attempts()) != 3 || !equalDurations(got, want) {
			t.Fatalf("%d attempts, slept %v, want %v", len(f.attempts()), got, want)
		}
	})
	t.Run("context", func(t *testing.T) {
		f := &faultServer{faults: 1000, fault: answer(503, "30")}
		clk := newFakeClock(false)
		c := startFaults(t, f, clk)
		ctx, cancel := context.WithCancel(ctxT(t))
		done := make(chan error, 1)
		go func() {
			_, err := c.send(ctx, request{method: http.MethodGet, path: "/x"})
			done <- err
		}()
		if d := <-clk.slept; d != 30*time.Second {
			t.Fatalf("slept %v", d)
		}
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "error from a previous attempt") ||
			len(f.attempts()) != 1 {
			t.Fatalf("err %v after %d attempts", err, len(f.attempts()))
		}
	})
}
