package cache

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
	"github.com/listwatch/listwatch/wire"
)

var (
	propSeeds = flag.Int("cache.seeds", 8, "seeds of TestProperty")
	propSeed  = flag.Int64("cache.seed", -1, "run TestProperty with this seed only")
	propOps   = flag.Int("cache.ops", 60, "writes per seed in TestProperty")
)

// TestProperty runs random writes against etcd, each followed by a LIST in
// a random resourceVersion mode (random limit, selector and prefix, pages
// followed to the end) and a WATCH from a random revision, and checks each
// against etcd itself at the same revision. Reproduce a failure with
// -cache.seed=N.
func TestProperty(t *testing.T) {
	seeds := make([]int64, 0, *propSeeds)
	if *propSeed >= 0 {
		seeds = append(seeds, *propSeed)
	} else {
		for i := range *propSeeds {
			seeds = append(seeds, int64(i))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			p := &prop{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 7)), seed: seed}
			p.run()
		})
	}
}

type prop struct {
	t    *testing.T
	rng  *rand.Rand
	seed int64
	e    *etcdtest.Etcd
	c    *running
	revs []int64 // revision of every write
	live map[string]bool
	// compacted is the revision etcd was last compacted at.
	compacted int64
}

func (p *prop) fatalf(format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("seed %d: %s", p.seed, fmt.Sprintf(format, args...))
}

var propSelectors = []string{"", "app=a", "app!=a", "app in (a,b)", "!app", "f:metadata.name=o3", "f:metadata.namespace!=ns0"}

func (p *prop) pred(s string) storage.Predicate {
	if len(s) > 2 && s[:2] == "f:" {
		f, err := object.ParseFieldSelector(s[2:])
		if err != nil {
			p.fatalf("%v", err)
		}
		return storage.Predicate{Field: f}
	}
	return labelPred(p.t, s)
}

func (p *prop) run() {
	p.e = etcdtest.Start(p.t)
	p.live = map[string]bool{}
	for range 5 {
		p.write()
	}
	cfg := Config{FreshnessTimeout: 5e9}
	if p.seed%2 == 1 {
		cfg.HistorySize = 15 // exercise eviction and reads older than history
	}
	p.c = startCache(p.t, p.e.Store, cfg)
	start := waitRev(p.t, p.c.Cache, p.e.Store)
	long := openWatch(p.t, p.c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: start})
	for i := range *propOps {
		p.write()
		if i%15 == 14 && p.seed%2 == 1 {
			p.compact()
		}
		p.list()
		p.watch()
	}
	if p.seed%2 == 0 {
		p.checkWatch(long, start, testPrefix, storage.Predicate{}, "long-lived watch")
	}
}

func (p *prop) write() {
	ns := fmt.Sprintf("ns%d", p.rng.IntN(2))
	name := fmt.Sprintf("o%d", p.rng.IntN(6))
	k := key(ns, name)
	var labels map[string]string
	if v := p.rng.IntN(4); v < 3 {
		labels = map[string]string{"app": string(rune('a' + v))}
	}
	var rev int64
	switch {
	case !p.live[k]:
		rev = mustCreate(p.t, p.e.Store, ns, name, labels)
		p.live[k] = true
	case p.rng.IntN(3) == 0:
		rev = mustDelete(p.t, p.e.Store, ns, name)
		delete(p.live, k)
	default:
		rev = mustUpdate(p.t, p.e.Store, ns, name, labels)
	}
	p.revs = append(p.revs, rev)
}

func (p *prop) compact() {
	rev := p.revs[len(p.revs)-8]
	if err := p.e.Store.Compact(context.Background(), rev); err != nil {
		p.fatalf("compact: %v", err)
	}
	p.compacted = rev
}

func (p *prop) randomRev() int64 { return p.revs[p.rng.IntN(len(p.revs))] }

func (p *prop) list() {
	sel := propSelectors[p.rng.IntN(len(propSelectors))]
	prefix := testPrefix
	if p.rng.IntN(3) == 0 {
		prefix += fmt.Sprintf("ns%d/", p.rng.IntN(2))
	}
	opts := storage.GetListOptions{Limit: int64(p.rng.IntN(4)), Predicate: p.pred(sel)}
	cur, err := p.e.Store.CurrentRevision(context.Background())
	if err != nil {
		p.fatalf("%v", err)
	}
	var atLeast, exact int64
	switch m := p.rng.IntN(4); m {
	case 0: // consistent
		atLeast = cur
	case 1:
		opts.Mode = storage.ReadAny
	case 2:
		atLeast = p.randomRev()
		opts.Mode, opts.Revision = storage.ReadNotOlderThan, atLeast
	case 3:
		exact = p.randomRev()
		opts.Mode, opts.Revision = storage.ReadExact, exact
	}
	desc := fmt.Sprintf("LIST %s mode=%v rev=%d limit=%d sel=%q", prefix, opts.Mode, opts.Revision, opts.Limit, sel)
	items, rev, err := listAll(p.t, p.c, prefix, opts)
	if exact != 0 && exact < p.compacted {
		var ce *storage.CompactedError
		if err != nil && !errors.As(err, &ce) {
			p.fatalf("%s: %v", desc, err)
		}
		if err != nil {
			return // 410 is right: etcd compacted it and the history may not hold it
		}
	}
	if err != nil {
		p.fatalf("%s: %v", desc, err)
	}
	switch {
	case rev < atLeast:
		p.fatalf("%s: revision %d < %d", desc, rev, atLeast)
	case exact != 0 && rev != exact:
		p.fatalf("%s: revision %d, want %d", desc, rev, exact)
	}
	if rev < p.compacted {
		return // served from history etcd no longer has; nothing to compare with
	}
	if err := sameKVs(items, oracleList(p.t, p.e.Store, prefix, rev, opts.Predicate)); err != nil {
		p.fatalf("%s at %d: %v", desc, rev, err)
	}
}

func (p *prop) watch() {
	sel := propSelectors[p.rng.IntN(len(propSelectors))]
	prefix := testPrefix
	if p.rng.IntN(3) == 0 {
		prefix += fmt.Sprintf("ns%d/", p.rng.IntN(2))
	}
	pred := p.pred(sel)
	cur := waitRev(p.t, p.c.Cache, p.e.Store)
	from := p.randomRev()
	opts := storage.WatchOptions{Mode: storage.ReadExact, Revision: from, Predicate: pred}
	initial := p.rng.IntN(4) == 0
	if initial {
		opts.SendInitialEvents, opts.Mode, opts.AllowBookmarks = ptr(true), storage.ReadNotOlderThan, true
	}
	desc := fmt.Sprintf("WATCH %s rv=%d initial=%v sel=%q", prefix, from, initial, sel)
	w, err := p.c.WatchList(context.Background(), prefix, opts)
	if err != nil {
		p.fatalf("%s: %v", desc, err)
	}
	defer w.Close()
	p.c.mu.RLock()
	startRev := p.c.ring.startRev
	p.c.mu.RUnlock()
	if initial {
		p.checkInitial(w, from, prefix, pred, desc)
		return
	}
	if from < startRev {
		var ce *storage.CompactedError
		if _, err := w.Next(context.Background()); !errors.As(err, &ce) {
			p.fatalf("%s: history starts at %d; Next: %v, want 410", desc, startRev, err)
		}
		return
	}
	if from < p.compacted {
		return // etcd cannot say what happened after from
	}
	_ = cur
	p.checkWatch(w, from, prefix, pred, desc)
}

// checkInitial checks the initial events against a list of etcd at the
// end bookmark's revision, then the changes after it.
func (p *prop) checkInitial(w storage.EventStream, from int64, prefix string, pred storage.Predicate, desc string) {
	var got []storage.KV
	for {
		ev := nextN(p.t, w, 1)[0]
		if ev.Type == wire.Bookmark {
			if !ev.InitialEventsEnd || ev.Revision < from {
				p.fatalf("%s: bookmark %+v", desc, ev)
			}
			want := oracleList(p.t, p.e.Store, prefix, ev.Revision, pred)
			if err := sameKVs(got, want); err != nil {
				p.fatalf("%s: initial events at %d: %v", desc, ev.Revision, err)
			}
			p.checkWatch(w, ev.Revision, prefix, pred, desc)
			return
		}
		if ev.Type != wire.Added {
			p.fatalf("%s: initial event %s", desc, ev.Type)
		}
		m := metaOf(p.t, ev.Object)
		got = append(got, storage.KV{Key: m.Key, Value: ev.Object, Revision: ev.Revision})
	}
}

// checkWatch reads w's events up to etcd's current revision and compares
// them with etcd's own watch from the same revision, filtered the way
// kube-apiserver filters.
func (p *prop) checkWatch(w storage.EventStream, from int64, prefix string, pred storage.Predicate, desc string) {
	want := p.oracleWatch(from, prefix, pred)
	got := describe(p.t, nextN(p.t, w, len(want)))
	if !slices.Equal(got, want) {
		p.fatalf("%s: events\n got %q\nwant %q", desc, got, want)
	}
	// The cache has seen every write, so nothing more may be pending.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		ev, err := w.Next(ctx)
		if errors.Is(err, context.Canceled) {
			return
		}
		if err != nil || ev.Type != wire.Bookmark {
			p.fatalf("%s: extra event %s %s (%v)", desc, ev.Type, ev.Object, err)
		}
	}
}

func (p *prop) oracleWatch(from int64, prefix string, pred storage.Predicate) []string {
	n := 0
	for _, r := range p.revs {
		if r > from {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	ctx := testCtx(p.t)
	ew, err := p.e.Store.Watch(ctx, testPrefix, from, false, storage.WithPrevValues())
	if err != nil {
		p.fatalf("oracle watch: %v", err)
	}
	defer ew.Close()
	var out []string
	for range n {
		ev, err := ew.Next(ctx)
		if err != nil {
			p.fatalf("oracle watch from %d: %v", from, err)
		}
		if len(ev.KV.Key) < len(prefix) || ev.KV.Key[:len(prefix)] != prefix {
			continue
		}
		old := ev.PrevValue != nil && mustMatch(p.t, pred, ev.PrevValue)
		now := ev.Type == storage.EventPut && mustMatch(p.t, pred, ev.KV.Value)
		var typ wire.EventType
		obj := metaOf(p.t, ev.KV.Value)
		switch {
		case old && now:
			typ = wire.Modified
		case now:
			typ = wire.Added
		case old:
			typ = wire.Deleted
			obj = metaOf(p.t, ev.PrevValue)
		default:
			continue
		}
		obj.RV = fmt.Sprint(ev.Revision)
		out = append(out, fmt.Sprintf("%s %s", typ, obj))
	}
	return out
}

func mustMatch(t testing.TB, p storage.Predicate, v []byte) bool {
	ok, err := p.Matches(v)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
