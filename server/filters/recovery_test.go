package filters

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestPanicRecovery(t *testing.T) {
	var e *env
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("boom in handler")
		case "/panic-late":
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			panic("boom after headers")
		case "/abort":
			panic(http.ErrAbortHandler)
		}
	})
	e = newEnv(t, envConfig{api: api})
	c := e.client(t, e.adminCert(t))

	resp := e.do(t, c, http.MethodGet, "/panic", "", nil)
	wantText(t, resp, http.StatusInternalServerError, "This request caused apiserver to panic. Look in the logs for details.")
	logs := e.logs.String()
	if !strings.Contains(logs, "panic serving request") || !strings.Contains(logs, "boom in handler") ||
		!strings.Contains(logs, "recovery_test.go") {
		t.Errorf("log lacks the panic and its origin:\n%s", logs)
	}

	// Once the response has begun the client must see it cut, not whole.
	resp = e.do(t, c, http.MethodGet, "/panic-late", "", nil)
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("a response cut by a panic read as complete")
	}
	if !strings.Contains(e.logs.String(), "boom after headers") {
		t.Error("late panic not logged")
	}

	before := e.logs.String()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/abort", nil)
	if resp, err := c.Do(req); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Error("ErrAbortHandler did not abort the response")
		}
	}
	if e.logs.String() != before {
		t.Errorf("ErrAbortHandler was logged: %s", strings.TrimPrefix(e.logs.String(), before))
	}
}
