package filters

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/wire"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func newRequest(method, target string) *http.Request { return httptest.NewRequest(method, target, nil) }

// bobMayDoAnything is a legacy ABAC line: every resource and path.
func bobMayDoAnything(t *testing.T) auth.PolicyList {
	t.Helper()
	pl, err := auth.ParsePolicyFile(strings.NewReader(`{"user":"bob"}`))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// async sends a request on its own goroutine and delivers the status code
// (or -1 on a transport error) when it completes.
func (e *env) async(c *http.Client, method, path, token string) <-chan int {
	out := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(method, e.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			out <- -1
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out <- resp.StatusCode
	}()
	return out
}

func (e *env) waitEntered(t *testing.T, n int) {
	t.Helper()
	for range n {
		<-e.entered
	}
}

func TestMaxInFlight(t *testing.T) {
	e := newEnv(t, envConfig{policy: bobMayDoAnything(t), limits: InFlightLimits{ReadOnly: 2, Mutating: 1, Watches: 1}})
	c := e.client(t)
	const pods = "/api/v1/namespaces/default/pods"

	held := []<-chan int{
		e.async(c, http.MethodGet, pods+"?hold=1", bobToken),
		e.async(c, http.MethodGet, pods+"/a?hold=1", bobToken),
		e.async(c, http.MethodPost, pods+"?hold=1", bobToken),
		e.async(c, http.MethodGet, pods+"?watch=1&hold=1", bobToken),
	}
	e.waitEntered(t, len(held))

	for _, r := range []struct{ method, path, token string }{
		{http.MethodGet, pods, bobToken},
		{http.MethodPut, pods + "/a", bobToken},
		{http.MethodGet, pods + "?watch=true", bobToken},
	} {
		resp := e.do(t, c, r.method, r.path, r.token, nil)
		if got := resp.Header.Get("Retry-After"); got != "1" {
			t.Errorf("%s %s: Retry-After %q, want 1", r.method, r.path, got)
		}
		wantText(t, resp, http.StatusTooManyRequests, "Too many requests, please try again later.")
	}
	// Like kube-apiserver, system:masters is not refused by the read-only
	// and mutating limits.
	decodeEcho(t, e.do(t, c, http.MethodGet, pods, e.creds.AdminToken, nil))
	decodeEcho(t, e.do(t, c, http.MethodDelete, pods+"/a", e.creds.AdminToken, nil))
	// Nor by the watch limit: no user can lock the admin out.
	decodeEcho(t, e.do(t, c, http.MethodGet, pods+"?watch=1", e.creds.AdminToken, nil))

	close(e.release)
	for i, ch := range held {
		if code := <-ch; code != http.StatusOK {
			t.Errorf("held request %d: %d", i, code)
		}
	}
	// Slots are given back.
	decodeEcho(t, e.do(t, c, http.MethodGet, pods, bobToken, nil))
	decodeEcho(t, e.do(t, c, http.MethodGet, pods+"?watch=1", bobToken, nil))
	decodeEcho(t, e.do(t, c, http.MethodPost, pods, bobToken, nil))
}

func TestInFlightLimitsDefaults(t *testing.T) {
	got := InFlightLimits{Mutating: -1}.withDefaults()
	if got != (InFlightLimits{ReadOnly: 400, Mutating: -1, Watches: 10000, WatchesPerUser: 1000}) {
		t.Errorf("withDefaults = %+v", got)
	}
	if newSemaphore(-1) != nil || !semaphore(nil).tryAcquire() {
		t.Error("a negative limit must mean unlimited")
	}
}

// chunked hides the length of r so the client sends Transfer-Encoding: chunked.
type chunked struct{ io.Reader }

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t, e.adminCert(t))
	const path = "/api/v1/namespaces/default/configmaps"
	const msg = "Request entity too large: limit is 3145728"
	big := bytes.Repeat([]byte("x"), 4<<20)

	resp := e.do(t, c, http.MethodPost, path, "", bytes.NewReader(big))
	wantStatus(t, resp, http.StatusRequestEntityTooLarge, wire.ReasonRequestEntityTooLarge, msg)

	resp = e.do(t, c, http.MethodPost, path, "", chunked{bytes.NewReader(big)})
	wantStatus(t, resp, http.StatusRequestEntityTooLarge, wire.ReasonRequestEntityTooLarge, msg)

	for _, n := range []int{0, 1 << 20, 3 << 20} {
		got := decodeEcho(t, e.do(t, c, http.MethodPost, path, "", chunked{bytes.NewReader(big[:n])}))
		if got.BodyLen != int64(n) {
			t.Errorf("chunked %d bytes: handler read %d", n, got.BodyLen)
		}
		got = decodeEcho(t, e.do(t, c, http.MethodPut, path+"/x", "", bytes.NewReader(big[:n])))
		if got.BodyLen != int64(n) {
			t.Errorf("sized %d bytes: handler read %d", n, got.BodyLen)
		}
	}
}

// TestBodyLimitReadsBounded: before its 413, BodyLimit(1000) reads an
// oversized HTTP/1.1 body whole when it is at most 2000 bytes, 2000 bytes
// of an endless chunked one, none of one whose client waits for 100
// Continue, and limit+1 (as kube) of a longer one, of one over HTTP/2 and
// of a long-running request's.
func TestBodyLimitReadsBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		length   int64 // declared; -1 for chunked, endless
		expect   bool
		min, max int64
	}{
		{"sized, within twice the limit", 2000, false, 2000, 2000},
		{"sized, past twice the limit", 2001, false, 1001, 1001},
		{"sized, 100-continue", 1500, true, 0, 0},
		{"sized, HTTP/2", 1500, false, 1001, 1001},
		{"sized, long-running", 1500, false, 1001, 1001},
		// io.ReadAll may over-ask slightly; LimitReader caps what it gets.
		{"chunked", -1, false, 2000, 2000 + 512},
		// Reading the first limit+1 bytes has asked for the rest.
		{"chunked, 100-continue", -1, true, 2000, 2000 + 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var read int64
			body := io.NopCloser(readFunc(func(p []byte) (int, error) {
				if tc.length >= 0 && read >= tc.length {
					return 0, io.EOF
				}
				if tc.length >= 0 {
					p = p[:min(int64(len(p)), tc.length-read)]
				}
				read += int64(len(p))
				return len(p), nil
			}))
			target := "/x"
			if strings.HasSuffix(tc.name, "long-running") {
				target = "/x?watch=1"
			}
			r := httptest.NewRequest(http.MethodPost, target, body)
			r.ContentLength = tc.length
			if strings.HasSuffix(tc.name, "HTTP/2") {
				r.ProtoMajor, r.ProtoMinor = 2, 0
			}
			if tc.expect {
				r.Header.Set("Expect", "100-Continue")
			}
			rec := newRecorder()
			BodyLimit(1000)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				t.Error("handler called for an oversized body")
			})).ServeHTTP(rec, r)
			if rec.Code != http.StatusRequestEntityTooLarge {
				t.Errorf("status %d", rec.Code)
			}
			if read < tc.min || read > tc.max {
				t.Errorf("read %d bytes, want %d to %d", read, tc.min, tc.max)
			}
		})
	}
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

func TestWatchesPerUser(t *testing.T) {
	pl, err := auth.ParsePolicyFile(strings.NewReader(`{"user":"bob"}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envConfig{policy: pl, limits: InFlightLimits{ReadOnly: 1, Watches: 2, WatchesPerUser: 1}})
	c := e.client(t)
	const pods = "/api/v1/namespaces/default/pods"
	held := e.async(c, http.MethodGet, pods+"?watch=1&hold=1", bobToken)
	e.waitEntered(t, 1)

	// bob has his one watch.
	resp := e.do(t, c, http.MethodGet, pods+"?watch=1", bobToken, nil)
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	wantText(t, resp, http.StatusTooManyRequests, "Too many requests, please try again later.")
	// His watch takes no read-only slot (there is one), and others' watches
	// are not his: the admin (exempt anyway) fills the second watch slot.
	decodeEcho(t, e.do(t, c, http.MethodGet, pods, bobToken, nil))
	adminHeld := e.async(c, http.MethodGet, pods+"?watch=1&hold=1", e.creds.AdminToken)
	e.waitEntered(t, 1)
	// Every slot taken: the admin still gets a watch.
	decodeEcho(t, e.do(t, c, http.MethodGet, pods+"?watch=1", e.creds.AdminToken, nil))

	close(e.release)
	for _, ch := range []<-chan int{held, adminHeld} {
		if code := <-ch; code != http.StatusOK {
			t.Errorf("held watch: %d", code)
		}
	}
	// bob's slot is given back.
	decodeEcho(t, e.do(t, c, http.MethodGet, pods+"?watch=1", bobToken, nil))
}

func TestPerUserForgetsIdleUsers(t *testing.T) {
	p := newPerUser(2)
	for range 2 {
		if !p.tryAcquire("bob") {
			t.Fatal("bob refused under his limit")
		}
	}
	if p.tryAcquire("bob") || !p.tryAcquire("carol") {
		t.Fatal("limit is not per user")
	}
	p.release("bob")
	p.release("bob")
	p.release("carol")
	if len(p.held) != 0 {
		t.Errorf("users without watches are remembered: %v", p.held)
	}
	if unlimited := newPerUser(-1); !unlimited.tryAcquire("x") {
		t.Error("a negative limit must mean unlimited")
	}
}

// TestMasterWatchesTakeNoSlot: the watches of system:masters (the
// server's own loopback informers among them) leave the watch limit to the
// users.
func TestMasterWatchesTakeNoSlot(t *testing.T) {
	pl, err := auth.ParsePolicyFile(strings.NewReader(`{"user":"bob"}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envConfig{policy: pl, limits: InFlightLimits{ReadOnly: 1, Watches: 1, WatchesPerUser: 1}})
	c := e.client(t)
	const pods = "/api/v1/namespaces/default/pods"
	adminHeld := e.async(c, http.MethodGet, pods+"?watch=1&hold=1", e.creds.AdminToken)
	e.waitEntered(t, 1)
	decodeEcho(t, e.do(t, c, http.MethodGet, pods+"?watch=1", bobToken, nil))
	close(e.release)
	if code := <-adminHeld; code != http.StatusOK {
		t.Errorf("held watch: %d", code)
	}
}
