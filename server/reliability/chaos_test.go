package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/internal/testsupport/faultproxy"
	"github.com/listwatch/listwatch/wire"
)

// chaosParams size one seed's run.
type chaosParams struct {
	keys, writers, opsPerWriter int
}

// chaosTotals accumulate what every seed checked, for the final report.
type chaosTotals struct {
	seeds, faults, writes, handlerEvents, divergences, violations atomic.Int64
}

// TestChaosConvergence runs informers through a fault-injecting proxy
// while writers churn configmaps and history is compacted under them, then
// checks that every cache equals a fresh LIST and every handler saw a
// consistent history. Replay a failing seed with -args -seed=N.
func TestChaosConvergence(t *testing.T) {
	p := chaosParams{keys: 150, writers: 3, opsPerWriter: 200}
	seeds := []uint64{1, 2, 3}
	if long() {
		p = chaosParams{keys: 1000, writers: 6, opsPerWriter: 2000}
		base := uint64(time.Now().UnixNano())
		seeds = nil
		for i := range uint64(40) {
			seeds = append(seeds, base+i)
		}
	}
	if *seedFlag != 0 {
		seeds = []uint64{*seedFlag}
	}
	srv := startServer(t, "", func(o *apiserver.Options) { o.CompactionInterval = time.Second })
	var tot chaosTotals
	for _, seed := range seeds {
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runChaos(t, srv, seed, p, &tot) })
		if !ok {
			t.Logf("seed %d FAILED; replay: go test ./reliability -run 'TestChaosConvergence' -args -seed=%d", seed, seed)
		}
	}
	t.Logf("chaos: seeds=%d faults=%d writes=%d handler-events=%d divergences=%d violations=%d",
		tot.seeds.Load(), tot.faults.Load(), tot.writes.Load(), tot.handlerEvents.Load(),
		tot.divergences.Load(), tot.violations.Load())
}

// watched is one informer under test and its checker.
type watched struct {
	name string
	inf  *informer.Informer[*object.Unstructured]
	hist *history
}

func runChaos(t *testing.T, srv *apiserver.APIServer, seed uint64, p chaosParams, tot *chaosTotals) {
	ns := fmt.Sprintf("chaos-%d", seed%1_000_000_000)
	cfg := adminConfig(t, srv.KubeconfigPath())
	admin := newClient(t, cfg)
	createNamespace(t, admin, ns)
	direct := client.NewResource[*object.Unstructured](admin, configmaps).Namespace(ns)

	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(u.Host, faultproxy.Options{
		Seed:      seed,
		ChunkSize: 4 << 10,
		Faults: faultproxy.Faults{
			Drop: 0.01, Truncate: 0.01,
			Stall: 0.02, StallMax: 2 * time.Second,
			Delay: 0.05, DelayMax: 5 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	defer func() { cancel(); bg.Wait() }()
	bg.Add(1)
	go func() { defer bg.Done(); _ = proxy.Run(ctx) }()

	infs := startChaosInformers(t, ctx, &bg, cfg, proxy.Addr(), ns)

	writes := chaosWrite(t, ctx, srv, direct, ns, seed, p, proxy)

	// Quiesce: the network heals, and every connection that might be
	// stalled is cut so that the informers reconnect at once.
	if err := proxy.SetFaults(faultproxy.Faults{}); err != nil {
		t.Fatal(err)
	}
	proxy.DropAll()
	diverged := awaitConvergence(t, ctx, direct, infs, 90*time.Second)

	var events int
	for _, w := range infs {
		_, violations, n := w.hist.snapshot()
		events += n
		for _, v := range violations {
			t.Errorf("seed %d, %s: %s", seed, w.name, v)
		}
		tot.violations.Add(int64(len(violations)))
	}
	s := proxy.Stats()
	tot.seeds.Add(1)
	tot.faults.Add(int64(s.Faults()))
	tot.writes.Add(writes)
	tot.handlerEvents.Add(int64(events))
	tot.divergences.Add(int64(diverged))
	t.Logf("seed %d: %d writes, %d handler events, proxy %+v", seed, writes, events, s)
}

func startChaosInformers(t *testing.T, ctx context.Context, bg *sync.WaitGroup, cfg *client.Config, proxyAddr, ns string) []*watched {
	t.Helper()
	base := informer.ReflectorOptions{
		MinWatchTimeout:    2 * time.Second,
		WatchDeadlineGrace: 2 * time.Second,
		Backoff:            informer.BackoffOptions{Initial: 20 * time.Millisecond, Max: 500 * time.Millisecond},
		Logger:             quietLogger(),
	}
	variants := map[string]func(*informer.ReflectorOptions){
		"paged":     func(o *informer.ReflectorOptions) { o.PageSize = 25 },
		"onepage":   func(o *informer.ReflectorOptions) { o.PageSize = -1 },
		"streaming": func(o *informer.ReflectorOptions) { o.StreamingList = true },
	}
	var out []*watched
	for name, mutate := range variants {
		pcfg := *cfg
		pcfg.Host = "https://" + proxyAddr
		// One client per informer: each gets its own connections, so a
		// fault hits one informer, not all of them at once.
		c := newClient(t, &pcfg)
		ro := base
		ro.Name = name
		mutate(&ro)
		inf, err := informer.New[*object.Unstructured](
			client.NewResource[*object.Unstructured](c, configmaps).Namespace(ns),
			informer.Options[*object.Unstructured]{Reflector: ro})
		if err != nil {
			t.Fatal(err)
		}
		h := newHistory()
		if _, err := inf.AddEventHandler(h.handler(), informer.HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
		bg.Add(1)
		go func() {
			defer bg.Done()
			if err := inf.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("informer %s: %v", name, err)
			}
		}()
		out = append(out, &watched{name: name, inf: inf, hist: h})
	}
	return out
}

// chaosWrite runs the writers and a compactor that chases them, and returns
// how many writes succeeded.
func chaosWrite(t *testing.T, ctx context.Context, srv *apiserver.APIServer, r *client.Resource[*object.Unstructured],
	ns string, seed uint64, p chaosParams, proxy *faultproxy.Proxy) int64 {
	var latest, writes atomic.Int64
	var wg sync.WaitGroup
	for w := range p.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range p.opsPerWriter {
				name := fmt.Sprintf("k%04d", rng.IntN(p.keys))
				rv, err := randomWrite(ctx, r, ns, name, rng, i)
				if err != nil {
					continue
				}
				writes.Add(1)
				for {
					cur := latest.Load()
					if rv <= cur || latest.CompareAndSwap(cur, rv) {
						break
					}
				}
			}
		}()
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-writersDone:
			return writes.Load()
		case <-tick.C:
		}
		// Compact to the newest acknowledged write, so that any watch or
		// continue token behind it gets 410 from etcd.
		if rev := latest.Load(); rev > 0 {
			if err := srv.Store().Compact(ctx, rev); err != nil {
				t.Logf("compact %d: %v", rev, err)
			}
		}
		if n%7 == 6 {
			proxy.DropAll()
		}
	}
}

// randomWrite creates, updates or deletes name, and returns the
// resourceVersion of the result (the delete's object's) on success.
// Conflicts, AlreadyExists and NotFound are expected and returned.
func randomWrite(ctx context.Context, r *client.Resource[*object.Unstructured], ns, name string, rng *rand.Rand, i int) (int64, error) {
	var obj *object.Unstructured
	var err error
	switch op := rng.IntN(10); {
	case op < 4:
		obj, err = r.Create(ctx, configMap(ns, name, map[string]any{"v": fmt.Sprint(i)}))
	case op < 8:
		obj, err = r.Patch(ctx, name, client.MergePatch, fmt.Appendf(nil, `{"data":{"v":"%d"}}`, i))
	default:
		_, err = r.Delete(ctx, name, wire.DeleteOptions{})
		if err == nil {
			return 0, nil
		}
	}
	if err != nil {
		return 0, err
	}
	var rv int64
	_, err = fmt.Sscan(obj.GetResourceVersion(), &rv)
	return rv, err
}

// awaitConvergence polls until every informer's store and every handler's
// state equal a fresh LIST, and returns how many informers never got there.
func awaitConvergence(t *testing.T, ctx context.Context, r *client.Resource[*object.Unstructured], infs []*watched, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		want, _, err := listAll(ctx, r)
		if err != nil {
			t.Fatalf("fresh LIST: %v", err)
		}
		var problems []string
		for _, w := range infs {
			got := map[string]string{}
			for _, o := range w.inf.Lister().List() {
				got[key(o)] = o.GetResourceVersion()
			}
			if d := diff(want, got); d != "" {
				problems = append(problems, w.name+" store: "+d)
			}
			state, _, _ := w.hist.snapshot()
			if d := diff(want, state); d != "" {
				problems = append(problems, w.name+" handler: "+d)
			}
		}
		if len(problems) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			for _, p := range problems {
				t.Errorf("diverged after %v of quiet: %s", within, p)
			}
			return len(problems)
		}
		time.Sleep(100 * time.Millisecond) // polling a real condition with a deadline
	}
}
