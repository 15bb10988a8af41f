package informer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/server/internal/testsupport/faultproxy"
	"github.com/listwatch/listwatch/wire"
)

// These tests run an informer against a real in-process server, through the
// fault-injecting TCP proxy (connection cuts) and a client transport hook
// (HTTP-level answers to watch requests), and count the LIST requests the
// informer sends: a reflector that resumes its watch sends none after the
// first sync.

var (
	cmGVR = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nsGVR = client.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// answer is a canned response to one watch request.
type answer func(req *http.Request) *http.Response

// wireTap counts the informer's configmap LISTs and WATCHes and answers the
// next watch requests with canned responses when armed.
type wireTap struct {
	base http.RoundTripper

	mu      sync.Mutex
	lists   int      // guarded by mu
	watches int      // guarded by mu
	next    []answer // guarded by mu; consumed one per watch request
}

func (w *wireTap) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/configmaps") {
		w.mu.Lock()
		if req.URL.Query().Get("watch") != "true" {
			w.lists++
			w.mu.Unlock()
			return w.base.RoundTrip(req)
		}
		w.watches++
		var a answer
		if len(w.next) > 0 {
			a, w.next = w.next[0], w.next[1:]
		}
		w.mu.Unlock()
		if a != nil {
			return a(req), nil
		}
	}
	return w.base.RoundTrip(req)
}

func (w *wireTap) arm(as ...answer) {
	w.mu.Lock()
	w.next = append(w.next, as...)
	w.mu.Unlock()
}

func (w *wireTap) counts() (lists, watches, armed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lists, w.watches, len(w.next)
}

func respond(req *http.Request, code int, header http.Header, body string) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	header.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}
}

func statusJSON(code int, reason wire.StatusReason, msg string) string {
	return fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
}

// status answers with an error Status, as kube-apiserver does.
func status(code int, reason wire.StatusReason, header http.Header) answer {
	return func(req *http.Request) *http.Response {
		return respond(req, code, header, statusJSON(code, reason, "injected"))
	}
}

// expiredEvent answers 200 with one ERROR event carrying 410 Expired, then
// ends the stream: what kube-apiserver sends for a compacted resourceVersion.
func expiredEvent(req *http.Request) *http.Response {
	return respond(req, http.StatusOK, nil,
		`{"type":"ERROR","object":`+statusJSON(410, wire.ReasonExpired, "too old resource version")+"}\n")
}

// emptyWatch answers 200 and ends the stream at once, with no event.
func emptyWatch(req *http.Request) *http.Response { return respond(req, http.StatusOK, nil, "") }

// relists counts the reflector's relists by reason.
type relists struct {
	mu sync.Mutex
	n  map[informer.RelistReason]int
}

func (r *relists) NewReflectorMetrics(string, func() informer.ReflectorSnapshot) informer.ReflectorMetrics {
	return r
}
func (r *relists) NewInformerMetrics(string, func() informer.InformerSnapshot) {}
func (r *relists) Listed(int, time.Duration, error)                            {}
func (r *relists) Watched(int, time.Duration, bool, error)                     {}
func (r *relists) Relisted(reason informer.RelistReason) {
	r.mu.Lock()
	r.n[reason]++
	r.mu.Unlock()
}

func (r *relists) get() map[informer.RelistReason]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[informer.RelistReason]int{}
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// resumeEnv is one server, one proxy in front of it, and a client for
// writing directly.
type resumeEnv struct {
	cfg    *client.Config
	proxy  *faultproxy.Proxy
	direct *client.Client
}

func newResumeEnv(t *testing.T) *resumeEnv {
	t.Helper()
	srv := apiservertest.Start(t, "")
	cfg, err := client.LoadKubeconfig(srv.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Timeout, cfg.Logger = -1, 30*time.Second, quiet
	direct, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.CloseIdleConnections)
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = proxy.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &resumeEnv{cfg: cfg, proxy: proxy, direct: direct}
}

// resumeCase is one informer, through the proxy and the tap, over a fresh
// namespace.
type resumeCase struct {
	env     *resumeEnv
	tap     *wireTap
	metrics *relists
	inf     *informer.Informer[*object.Unstructured]
	cms     *client.Resource[*object.Unstructured] // direct, not proxied
	n       int
}

func startResumeCase(t *testing.T, env *resumeEnv, ns string, mutate func(*informer.ReflectorOptions)) *resumeCase {
	t.Helper()
	ctx := t.Context()
	nsObj := &object.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := client.NewResource[*object.Unstructured](env.direct, nsGVR).Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	rc := &resumeCase{env: env, metrics: &relists{n: map[informer.RelistReason]int{}},
		cms: client.NewResource[*object.Unstructured](env.direct, cmGVR).Namespace(ns)}
	for range 3 {
		rc.write(t)
	}
	pcfg := *env.cfg
	pcfg.Host = "https://" + env.proxy.Addr()
	pcfg.WrapTransport = func(base http.RoundTripper) http.RoundTripper {
		rc.tap = &wireTap{base: base}
		return rc.tap
	}
	c, err := client.New(&pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ro := informer.ReflectorOptions{
		Name: ns, PageSize: -1, Logger: quiet,
		MinWatchTimeout: time.Minute, // no server-side ends during the test
		Backoff:         informer.BackoffOptions{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond},
		Metrics:         rc.metrics,
	}
	if mutate != nil {
		mutate(&ro)
	}
	inf, err := informer.New(client.NewResource[*object.Unstructured](c, cmGVR).Namespace(ns),
		informer.Options[*object.Unstructured]{Reflector: ro})
	if err != nil {
		t.Fatal(err)
	}
	rc.inf = inf
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	rc.waitFor(t, func() bool { return inf.HasSynced() && len(inf.Lister().List()) == rc.n }, "initial sync")
	// Synced is before the watch is sent: see a write through it, so that
	// the faults that follow meet an open watch.
	rc.writeAndSee(t)
	return rc
}

// write creates one more configmap, directly on the server.
func (rc *resumeCase) write(t *testing.T) string {
	t.Helper()
	rc.n++
	name := fmt.Sprintf("cm%02d", rc.n)
	obj := &object.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name}, "data": map[string]any{"n": fmt.Sprint(rc.n)}}}
	if _, err := rc.cms.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	return name
}

// waitFor polls cond, a real condition, until a deadline.
func (rc *resumeCase) waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			lists, watches, armed := rc.tap.counts()
			t.Fatalf("%s: not reached in 20s (lists %d, watches %d, unused answers %d, last error %v)",
				what, lists, watches, armed, rc.inf.LastSyncError())
		}
		time.Sleep(2 * time.Millisecond) // polling a real condition, with a deadline
	}
}

// writeAndSee writes a configmap and waits for the informer to have it: the
// watch is up again.
func (rc *resumeCase) writeAndSee(t *testing.T) {
	t.Helper()
	name := rc.write(t)
	rc.waitFor(t, func() bool { return len(rc.inf.Lister().List()) == rc.n }, "watch delivers "+name)
}

// waitWatches waits until the informer has sent at least n watch requests
// and every canned answer has been used.
func (rc *resumeCase) waitWatches(t *testing.T, n int) {
	t.Helper()
	rc.waitFor(t, func() bool { _, w, armed := rc.tap.counts(); return w >= n && armed == 0 }, fmt.Sprintf("%d watch requests", n))
}

func (rc *resumeCase) lists() int { l, _, _ := rc.tap.counts(); return l }

func TestWatchResumesAfterFaults(t *testing.T) {
	env := newResumeEnv(t)
	ns := 0
	next := func() string { ns++; return fmt.Sprintf("resume-%d", ns) }

	t.Run("connection cuts do not relist", func(t *testing.T) {
		rc := startResumeCase(t, env, next(), nil)
		before := rc.lists()
		for range 5 {
			_, w, _ := rc.tap.counts()
			env.proxy.DropAll()
			rc.waitWatches(t, w+1)
			rc.writeAndSee(t)
		}
		if got := rc.lists() - before; got != 0 {
			t.Fatalf("%d LISTs after 5 connection cuts, want 0 (relists %v)", got, rc.metrics.get())
		}
	})

	t.Run("5xx and 429 on watch re-watch", func(t *testing.T) {
		rc := startResumeCase(t, env, next(), nil)
		before := rc.lists()
		_, w, _ := rc.tap.counts()
		rc.tap.arm(
			status(http.StatusServiceUnavailable, wire.ReasonServiceUnavailable, nil),
			status(http.StatusInternalServerError, wire.ReasonInternalError, nil),
			// As kube-apiserver's max-in-flight and priority-and-fairness
			// filters answer: plain text, the delay in a header.
			func(req *http.Request) *http.Response {
				return respond(req, http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}},
					"Too many requests, please try again later.\n")
			},
		)
		env.proxy.DropAll()
		start := time.Now()
		rc.waitWatches(t, w+4)
		rc.writeAndSee(t)
		if got := rc.lists() - before; got != 0 {
			t.Fatalf("%d LISTs after 5xx and 429 on watch, want 0 (relists %v)", got, rc.metrics.get())
		}
		if d := time.Since(start); d < time.Second {
			t.Fatalf("re-watched %v after a 429 with Retry-After: 1", d)
		}
	})

	t.Run("short empty watches re-watch", func(t *testing.T) {
		rc := startResumeCase(t, env, next(), nil)
		before := rc.lists()
		_, w, _ := rc.tap.counts()
		rc.tap.arm(emptyWatch, emptyWatch, emptyWatch)
		env.proxy.DropAll()
		rc.waitWatches(t, w+4)
		rc.writeAndSee(t)
		if got := rc.lists() - before; got != 0 {
			t.Fatalf("%d LISTs after short clean watches, want 0 (relists %v)", got, rc.metrics.get())
		}
	})

	for _, tc := range []struct {
		name string
		a    answer
	}{
		{"410 response", status(http.StatusGone, wire.ReasonGone, nil)},
		{"410 ERROR event", expiredEvent},
	} {
		t.Run(tc.name+" relists once", func(t *testing.T) {
			rc := startResumeCase(t, env, next(), nil)
			before := rc.lists()
			_, w, _ := rc.tap.counts()
			rc.tap.arm(tc.a)
			env.proxy.DropAll() // the next watch meets the 410
			rc.waitWatches(t, w+2)
			rc.writeAndSee(t)
			if got := rc.lists() - before; got != 1 {
				t.Fatalf("%d LISTs after one 410, want 1 (relists %v)", got, rc.metrics.get())
			}
			if got := rc.metrics.get(); got[informer.RelistExpired] != 1 || len(got) != 1 {
				t.Fatalf("relists %v, want one %q", got, informer.RelistExpired)
			}
		})
	}

	t.Run("bounded watch failures relist", func(t *testing.T) {
		rc := startResumeCase(t, env, next(), func(o *informer.ReflectorOptions) { o.RelistAfterWatchFailures = 3 })
		before := rc.lists()
		_, w, _ := rc.tap.counts()
		unavailable := status(http.StatusServiceUnavailable, wire.ReasonServiceUnavailable, nil)
		rc.tap.arm(unavailable, unavailable, unavailable)
		env.proxy.DropAll()
		rc.waitWatches(t, w+4)
		rc.writeAndSee(t)
		if got := rc.lists() - before; got != 1 {
			t.Fatalf("%d LISTs after 3 failed watches with a bound of 3, want 1", got)
		}
		if got := rc.metrics.get(); got[informer.RelistWatchFailures] != 1 || len(got) != 1 {
			t.Fatalf("relists %v, want one %q", got, informer.RelistWatchFailures)
		}
	})
}
