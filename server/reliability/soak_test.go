package reliability

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/wire"
)

// soakParams size the soak.
type soakParams struct {
	watchers  int
	duration  time.Duration
	writeRate int // writes per second
	keys      int
}

// TestSoakWatchersAndListStorms opens many watchers from one
// resourceVersion, writes at a steady rate while LIST storms (paged and
// not) hit the server, and then checks every watcher's event sequence
// against the write log: nothing lost, nothing duplicated, nothing out of
// order. It samples the in-process server's goroutines and heap for a
// growth trend, and checks that goroutines return to their baseline.
func TestSoakWatchersAndListStorms(t *testing.T) {
	p := soakParams{watchers: 200, duration: 20 * time.Second, writeRate: 25, keys: 200}
	if long() {
		p = soakParams{watchers: 2000, duration: 10 * time.Minute, writeRate: 50, keys: 1000}
	}
	baseline := runtime.NumGoroutine()
	srv := startServer(t, "")
	cfg := adminConfig(t, srv.KubeconfigPath())
	admin := newClient(t, cfg)
	createNamespace(t, admin, "soak")
	r := client.NewResource[*object.Unstructured](admin, configmaps).Namespace("soak")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, startRV, err := listAll(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	// The running server's own goroutines (a watch cache per served
	// resource, started with it), before any watcher.
	serverBase := runtime.NumGoroutine()

	// Watchers spread over a few clients (and so connections).
	var clients []*client.Resource[*object.Unstructured]
	for range 8 {
		clients = append(clients, client.NewResource[*object.Unstructured](newClient(t, cfg), configmaps).Namespace("soak"))
	}
	watchers := make([]*soakWatcher, p.watchers)
	var wg sync.WaitGroup
	for i := range watchers {
		w := &soakWatcher{}
		watchers[i] = w
		wg.Add(1)
		go func() { defer wg.Done(); w.run(ctx, clients[i%len(clients)], startRV) }()
	}

	sampler := &runtimeSampler{}
	var log []int64
	var writeErrs []string // the first unacknowledged writes', guarded by logMu
	var logMu sync.Mutex
	var storms, stormLists atomic.Int64
	phase, stopPhase := context.WithTimeout(ctx, p.duration)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); sampler.run(phase, time.Second) }()
	for wr := range soakWriters {
		bg.Add(1)
		go func() {
			defer bg.Done()
			steadyWrites(phase, r, wr, p, func(rv int64, err error) {
				logMu.Lock()
				defer logMu.Unlock()
				if err == nil {
					log = append(log, rv)
				} else if len(writeErrs) < 5 {
					writeErrs = append(writeErrs, err.Error())
				}
			})
		}()
	}
	go func() {
		defer bg.Done()
		listStorms(phase, t, clients, &storms, &stormLists)
	}()
	bg.Wait()
	stopPhase()

	slices.Sort(log)
	lost, dups := awaitWatchers(t, watchers, log, 2*time.Minute)
	if len(writeErrs) > 0 {
		// A write that failed may still have been committed: its event
		// is then one the log does not have.
		t.Logf("unacknowledged writes: %q", writeErrs)
	}
	cancel()
	wg.Wait()
	var events int
	for _, w := range watchers {
		events += len(w.rvs)
	}
	t.Logf("soak: %d watchers, %d writes, %d watcher-events checked, %d lost, %d duplicated/out of order, %d LIST storms (%d LISTs)",
		p.watchers, len(log), events, lost, dups, storms.Load(), stormLists.Load())
	sampler.check(t)

	// Watchers are gone: the server's goroutines must return to about
	// where they were (the server itself adds a bounded number).
	admin.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > serverBase+100 {
		if time.Now().After(deadline) {
			t.Errorf("goroutines: %d after the soak, %d with the server running before it (%d before the server)",
				runtime.NumGoroutine(), serverBase, baseline)
			break
		}
		time.Sleep(100 * time.Millisecond) // polling a real condition with a deadline
	}
}

// soakWatcher records the resourceVersions of the events one watch
// stream delivers, reconnecting from the last one if the stream ends.
type soakWatcher struct {
	mu sync.Mutex
	// rvs are the resourceVersions received, in order. Guarded by mu.
	rvs []int64
	// errs describe unexpected stream ends. Guarded by mu.
	errs []string
}

func (w *soakWatcher) run(ctx context.Context, r *client.Resource[*object.Unstructured], from string) {
	for ctx.Err() == nil {
		st, err := r.Watch(ctx, wire.ListOptions{ResourceVersion: from, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				w.note(fmt.Sprintf("open from %s: %v", from, err))
				time.Sleep(100 * time.Millisecond) // backoff before reopening
			}
			continue
		}
		for {
			ev, err := st.Next()
			if err != nil {
				if ctx.Err() == nil {
					w.note(fmt.Sprintf("stream from %s ended: %v", from, err))
				}
				break
			}
			from = ev.Object.GetResourceVersion()
			if ev.Type == wire.Bookmark {
				continue
			}
			rv, _ := strconv.ParseInt(from, 10, 64)
			w.mu.Lock()
			w.rvs = append(w.rvs, rv)
			w.mu.Unlock()
		}
		st.Close()
	}
}

func (w *soakWatcher) note(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < 5 {
		w.errs = append(w.errs, s)
	}
}

func (w *soakWatcher) received() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.rvs)
}

// awaitWatchers waits until every watcher has as many events as the log,
// then compares each sequence with the log.
func awaitWatchers(t *testing.T, ws []*soakWatcher, log []int64, within time.Duration) (lost, dups int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, w := range ws {
		for w.received() < len(log) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond) // polling a real condition with a deadline
		}
	}
	reported := 0
	for i, w := range ws {
		w.mu.Lock()
		got := slices.Clone(w.rvs)
		errs := slices.Clone(w.errs)
		w.mu.Unlock()
		l, d := compareRVs(log, got)
		lost += l
		dups += d
		if (l > 0 || d > 0 || len(errs) > 0) && reported < 5 {
			reported++
			t.Errorf("watcher %d: %d events, want %d: %d lost, %d duplicated or out of order; errors %q", i, len(got), len(log), l, d, errs)
		}
	}
	return lost, dups
}

// compareRVs counts log entries missing from got, and entries of got that
// are duplicated, out of order or not in the log.
func compareRVs(log, got []int64) (lost, bad int) {
	in := make(map[int64]bool, len(log))
	for _, rv := range log {
		in[rv] = true
	}
	seen := make(map[int64]bool, len(got))
	var last int64
	for _, rv := range got {
		if rv <= last || !in[rv] || seen[rv] {
			bad++
		}
		seen[rv] = true
		last = max(last, rv)
	}
	for _, rv := range log {
		if !seen[rv] {
			lost++
		}
	}
	return lost, bad
}

// soakWriters share the write rate, so that one slow write does not stall
// the rate.
const soakWriters = 4

// steadyWrites creates and then patches writer wr's share of the keys at
// its share of p.writeRate until ctx ends, logging each acknowledged
// resourceVersion (or the error of a write it could not acknowledge).
func steadyWrites(ctx context.Context, r *client.Resource[*object.Unstructured], wr int, p soakParams, ack func(int64, error)) {
	keys := p.keys / soakWriters
	tick := time.NewTicker(time.Second * soakWriters / time.Duration(p.writeRate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		name := fmt.Sprintf("s%d-%04d", wr, i%keys)
		// The write itself is not cancelled with the phase: a write
		// that the server commits must be acknowledged, or the watchers
		// would see an event the log does not have.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		var obj *object.Unstructured
		var err error
		if i < keys {
			obj, err = r.Create(wctx, configMap("soak", name, map[string]any{"i": strconv.Itoa(i)}))
		} else {
			obj, err = r.Patch(wctx, name, client.MergePatch, fmt.Appendf(nil, `{"data":{"i":"%d"}}`, i))
		}
		if code := wire.CodeOf(err); err != nil && (code == 0 || code >= 500) {
			// No answer (the connection failed: a loaded server drops
			// new ones, and a write is not retried), or one that leaves
			// the outcome open (etcd's "request timed out" is a 500 of
			// a write it may have committed). Only this writer writes
			// the key, so the object tells.
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			obj, err = committed(cctx, r, name, i)
			ccancel()
		}
		cancel()
		if err != nil {
			ack(0, fmt.Errorf("write %d of %s: %w", i, name, err))
			continue
		}
		ack(mustRV(obj), nil)
	}
}

// committed returns the object name if its data holds write i, else an
// error.
func committed(ctx context.Context, r *client.Resource[*object.Unstructured], name string, i int) (*object.Unstructured, error) {
	obj, err := r.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if data, _ := obj.Object["data"].(map[string]any); data["i"] != strconv.Itoa(i) {
		return nil, fmt.Errorf("write %d of %s not committed", i, name)
	}
	return obj, nil
}

// listStorms fires bursts of concurrent LISTs, half paged (walking every
// continue token) and half whole, every two seconds until ctx ends.
func listStorms(ctx context.Context, t *testing.T, rs []*client.Resource[*object.Unstructured], storms, lists *atomic.Int64) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		storms.Add(1)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rs[i%len(rs)]
				opts := wire.ListOptions{}
				if i%2 == 0 {
					opts.Limit = 17
				}
				for {
					l, err := r.List(ctx, opts)
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("LIST in storm: %v", err)
						}
						return
					}
					lists.Add(1)
					if l.Metadata.Continue == "" {
						return
					}
					opts.Continue = l.Metadata.Continue
				}
			}()
		}
		wg.Wait()
	}
}

// runtimeSampler records goroutine counts and live heap over time.
type runtimeSampler struct {
	mu         sync.Mutex
	goroutines []int
	heap       []uint64
}

func (s *runtimeSampler) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.mu.Lock()
		s.goroutines = append(s.goroutines, runtime.NumGoroutine())
		s.heap = append(s.heap, ms.HeapAlloc)
		s.mu.Unlock()
	}
}

// check compares the first and last thirds of the samples: a leak shows as
// steady growth, while the watch cache's ring filling up is bounded.
func (s *runtimeSampler) check(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.heap)
	if n < 6 {
		t.Logf("only %d runtime samples; no trend check", n)
		return
	}
	third := n / 3
	meanI := func(xs []int) float64 {
		var s float64
		for _, x := range xs {
			s += float64(x)
		}
		return s / float64(len(xs))
	}
	meanU := func(xs []uint64) float64 {
		var s float64
		for _, x := range xs {
			s += float64(x)
		}
		return s / float64(len(xs))
	}
	g0, g1 := meanI(s.goroutines[:third]), meanI(s.goroutines[n-third:])
	h0, h1 := meanU(s.heap[:third]), meanU(s.heap[n-third:])
	t.Logf("runtime: goroutines %.0f -> %.0f, heap %.1f MiB -> %.1f MiB over %d samples", g0, g1, h0/(1<<20), h1/(1<<20), n)
	if g1 > g0*1.1+50 {
		t.Errorf("goroutines grew from %.0f to %.0f during the steady phase", g0, g1)
	}
	if h1 > h0*1.5+64<<20 {
		t.Errorf("heap grew from %.1f MiB to %.1f MiB during the steady phase", h0/(1<<20), h1/(1<<20))
	}
}

// TestInFlightLimitAnswers429 floods a server whose read-only in-flight
// limit is small with LISTs from a non-admin user (system:masters is
// exempt, as in kube): the excess gets 429 TooManyRequests, the rest succeed, and the server keeps serving.
func TestInFlightLimitAnswers429(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	policy := filepath.Join(dir, "policy.jsonl")
	if err := os.WriteFile(tokens, []byte("soak-token,soaker,1001,\"soakers\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"soaker","namespace":"*","resource":"*","apiGroup":"*"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.TokenAuthFile = tokens
		o.AuthorizationPolicyFile = policy
		o.MaxRequestsInFlight = 4
	})
	// Give each LIST something to do.
	admin := configmapsOf(t, srv.KubeconfigPath(), "default")
	for i := range 300 {
		if _, err := admin.Create(context.Background(), configMap("default", fmt.Sprintf("f%03d", i), map[string]any{"pad": string(make([]byte, 64))})); err != nil {
			t.Fatal(err)
		}
	}
	h := newHostile(t, srv)
	h.token = "soak-token"
	h.http.Transport.(*http.Transport).MaxConnsPerHost = 0

	const n = 200
	var wg sync.WaitGroup
	codes := make([]int, n)
	reasons := make([]wire.StatusReason, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, st, err := h.do("GET", "/api/v1/namespaces/default/configmaps", "", nil, nil)
			codes[i], reasons[i], errs[i] = code, st.Reason, err
		}()
	}
	wg.Wait()
	var ok, limited int
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Errorf("request %d: %v", i, errs[i])
		case codes[i] == 200:
			ok++
		case codes[i] == 429: // kube's plain-text 429, no Status
			limited++
		default:
			t.Errorf("request %d: %d %s", i, codes[i], reasons[i])
		}
	}
	t.Logf("in-flight flood: %d requests, %d OK, %d answered 429", n, ok, limited)
	if limited == 0 || ok == 0 {
		t.Errorf("want both successes and 429s, got %d OK and %d 429", ok, limited)
	}
	// The admin is exempt and the server is still healthy.
	if _, err := admin.List(context.Background(), wire.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("admin LIST after the flood: %v", err)
	}
}
