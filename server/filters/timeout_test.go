package filters

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/wire"
)

func TestTimeoutOverHTTPS(t *testing.T) {
	e := newEnv(t, envConfig{timeout: 50 * time.Millisecond})
	c := e.client(t, e.adminCert(t))
	const pods = "/api/v1/namespaces/default/pods"
	// The held handler waits for its context, which the deadline ends.
	resp := e.do(t, c, http.MethodGet, pods+"?hold=1", "", nil)
	wantStatus(t, resp, http.StatusGatewayTimeout, wire.ReasonTimeout,
		"Timeout: request did not complete within requested timeout - context deadline exceeded")
	<-e.entered

	if got := decodeEcho(t, e.do(t, c, http.MethodGet, pods, "", nil)); !got.HasDeadline {
		t.Error("a list has no deadline")
	}
	if got := decodeEcho(t, e.do(t, c, http.MethodGet, pods+"?watch=1", "", nil)); got.HasDeadline {
		t.Error("a watch was given the request deadline")
	}
}

func TestTimeoutDiscardsLateWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer letWorkersEnd()
		late := make(chan error, 1)
		h := Timeout(time.Second)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			w.Header().Set("X-Late", "1")
			w.WriteHeader(http.StatusCreated)
			_, err := w.Write([]byte("late"))
			w.(http.Flusher).Flush()
			late <- err
		}))
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
		if d := time.Since(start); d != time.Second {
			t.Errorf("answered after %v, want 1s", d)
		}
		if rec.Code != http.StatusGatewayTimeout || rec.Header().Get("X-Late") != "" {
			t.Errorf("code %d, X-Late %q", rec.Code, rec.Header().Get("X-Late"))
		}
		body := rec.Body.String()
		if err := <-late; !errors.Is(err, http.ErrHandlerTimeout) {
			t.Errorf("late write error %v, want ErrHandlerTimeout", err)
		}
		if rec.Body.String() != body {
			t.Error("late write reached the client")
		}
	})
}

func TestTimeoutAfterHeadersAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer letWorkersEnd()
		h := Timeout(time.Second)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			<-r.Context().Done()
		}))
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", p)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
	})
}

func TestTimeoutFastHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer letWorkersEnd()
		h := Timeout(time.Second)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-A", "b")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte("ok"))
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
		if rec.Code != http.StatusAccepted || rec.Body.String() != "ok" || rec.Header().Get("X-A") != "b" {
			t.Errorf("got %d %q %v", rec.Code, rec.Body.String(), rec.Header())
		}
	})
}

func TestTimeoutRepanicsWithStack(t *testing.T) {
	h := Timeout(time.Minute)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}))
	defer func() {
		hp, ok := recover().(*HandlerPanic)
		if !ok || hp.Value != "boom" || len(hp.Stack) == 0 {
			t.Errorf("recovered %#v, want *HandlerPanic(boom) with a stack", hp)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
}

func TestTimeoutKeepsHeadersOfSilentHandler(t *testing.T) {
	h := Timeout(time.Minute)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Only", "headers")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("X-Only") != "headers" {
		t.Errorf("code %d, headers %v", rec.Code, rec.Header())
	}
}

// letWorkersEnd, deferred first inside a synctest bubble, moves the
// bubble's clock past the time the filter's idle goroutines wait for more
// requests, so that they end before the bubble does.
func letWorkersEnd() { time.Sleep(workerIdle) }

// TestTimeoutParameter: as kube's WithRequestDeadline, the request's
// timeout parameter shortens the deadline (never lengthens it), and one
// that does not parse is kube's 400.
func TestTimeoutParameter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer letWorkersEnd()
		h := Timeout(time.Minute)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}))
		for _, c := range []struct {
			query string
			after time.Duration
		}{{"?timeout=2s", 2 * time.Second}, {"?timeout=1h", time.Minute}, {"?timeout=0s", time.Minute}, {"?timeout=-3s", time.Minute}} {
			rec := httptest.NewRecorder()
			start := time.Now()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods"+c.query, nil))
			if d := time.Since(start); d != c.after || rec.Code != http.StatusGatewayTimeout {
				t.Errorf("%s: %d after %v, want 504 after %v", c.query, rec.Code, d, c.after)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods?timeout=abc", nil))
		if want := `invalid timeout specified in the request URL - time: invalid duration \"abc\"`; rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("timeout=abc: %d %s", rec.Code, rec.Body)
		}
	})
}
