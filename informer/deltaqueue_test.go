package informer_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

func obj(name, rv string) U {
	o := newObj("ns", name, nil)
	o.SetResourceVersion(rv)
	return o
}

type popped struct {
	key     string
	types   []informer.DeltaType
	unknown []bool
	rvs     []string
	initial bool
}

func popAll(t *testing.T, q *informer.DeltaQueue[U], store *informer.Store[U]) []popped {
	t.Helper()
	var out []popped
	for q.Len() > 0 {
		err := q.Pop(context.Background(), func(key string, ds informer.Deltas[U], initial bool) error {
			p := popped{key: key, initial: initial}
			for _, d := range ds {
				p.types = append(p.types, d.Type)
				p.unknown = append(p.unknown, d.FinalStateUnknown)
				p.rvs = append(p.rvs, d.Object.GetResourceVersion())
				if store != nil {
					if d.Type == informer.Deleted {
						store.Delete(d.Object)
					} else {
						store.Update(d.Object)
					}
				}
			}
			out = append(out, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestDeltaQueueCoalescesPerKey(t *testing.T) {
	q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{})
	_ = q.Add(obj("a", "1"))
	_ = q.Add(obj("b", "2"))
	_ = q.Update(obj("a", "3"))
	got := popAll(t, q, nil)
	if len(got) != 2 || got[0].key != "ns/a" || !slices.Equal(got[0].types, []informer.DeltaType{informer.Added, informer.Updated}) ||
		!slices.Equal(got[0].rvs, []string{"1", "3"}) || got[1].key != "ns/b" {
		t.Fatalf("got %+v", got)
	}
}

func TestDeltaQueueDedupsDeletes(t *testing.T) {
	store, _ := informer.NewStore[U](nil)
	store.Add(obj("a", "1"))
	q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{KnownObjects: store})
	_ = q.Delete(obj("a", "2"))
	_ = q.Replace(nil, "3")        // a second, final-state-unknown delete
	_ = q.Delete(obj("gone", "4")) // never known: ignored
	got := popAll(t, q, store)
	if len(got) != 1 || !slices.Equal(got[0].types, []informer.DeltaType{informer.Deleted}) || got[0].unknown[0] || got[0].rvs[0] != "2" {
		t.Fatalf("got %+v, want one Deleted with the known final state", got)
	}
}

func TestDeltaQueueReplaceDeletesWithLastKnown(t *testing.T) {
	store, _ := informer.NewStore[U](nil)
	q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{KnownObjects: store})
	_ = q.Replace([]U{obj("a", "1"), obj("b", "1"), obj("c", "1")}, "1")
	if q.HasSynced() {
		t.Fatal("synced before popping")
	}
	first := popAll(t, q, store)
	if !q.HasSynced() || len(first) != 3 || !first[0].initial {
		t.Fatalf("synced=%v first=%+v", q.HasSynced(), first)
	}
	_ = q.Update(obj("c", "5")) // queued, not yet in the store
	_ = q.Replace([]U{obj("a", "6")}, "6")
	got := popAll(t, q, store)
	want := map[string]popped{
		"ns/a": {types: []informer.DeltaType{informer.Replaced}, rvs: []string{"6"}, unknown: []bool{false}},
		"ns/b": {types: []informer.DeltaType{informer.Deleted}, rvs: []string{"1"}, unknown: []bool{true}},
		"ns/c": {types: []informer.DeltaType{informer.Updated, informer.Deleted}, rvs: []string{"5", "5"}, unknown: []bool{false, true}},
	}
	for _, p := range got {
		w := want[p.key]
		if !slices.Equal(p.types, w.types) || !slices.Equal(p.rvs, w.rvs) || !slices.Equal(p.unknown, w.unknown) || p.initial {
			t.Errorf("%s: got %+v want %+v", p.key, p, w)
		}
	}
	if len(got) != 3 || store.Len() != 1 {
		t.Fatalf("got %d keys, store %v", len(got), store.ListKeys())
	}
}

// An object deleted and created again under the same name while the watch
// was down comes back from the relist with a new UID: the queue must report
// the old one Deleted before the new one, not an update of one into the
// other.
func TestDeltaQueueReplaceRecreatedObject(t *testing.T) {
	withUID := func(name, rv, uid string) U {
		o := obj(name, rv)
		o.SetNested(uid, "metadata", "uid")
		return o
	}
	store, _ := informer.NewStore[U](nil)
	store.Add(withUID("known", "1", "uid-1"))
	store.Add(withUID("same", "1", "uid-2"))
	q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{KnownObjects: store})
	_ = q.Add(withUID("queued", "2", "uid-3")) // not popped yet
	_ = q.Replace([]U{withUID("known", "5", "uid-4"), withUID("same", "5", "uid-2"), withUID("queued", "5", "uid-5")}, "5")
	want := map[string]popped{
		"ns/known":  {types: []informer.DeltaType{informer.Deleted, informer.Replaced}, rvs: []string{"1", "5"}, unknown: []bool{true, false}},
		"ns/same":   {types: []informer.DeltaType{informer.Replaced}, rvs: []string{"5"}, unknown: []bool{false}},
		"ns/queued": {types: []informer.DeltaType{informer.Added, informer.Deleted, informer.Replaced}, rvs: []string{"2", "2", "5"}, unknown: []bool{false, true, false}},
	}
	got := popAll(t, q, store)
	for _, p := range got {
		w := want[p.key]
		if !slices.Equal(p.types, w.types) || !slices.Equal(p.rvs, w.rvs) || !slices.Equal(p.unknown, w.unknown) {
			t.Errorf("%s: got %+v want %+v", p.key, p, w)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("popped %d keys, want %d", len(got), len(want))
	}
}

func TestDeltaQueueRequeue(t *testing.T) {
	q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{})
	_ = q.Replace([]U{obj("a", "1")}, "1")
	err := q.Pop(context.Background(), func(string, informer.Deltas[U], bool) error {
		return errors.Join(errors.New("busy"), informer.ErrRequeue)
	})
	if !errors.Is(err, informer.ErrRequeue) || q.Len() != 1 || q.HasSynced() {
		t.Fatalf("err=%v len=%d synced=%v: requeued item lost", err, q.Len(), q.HasSynced())
	}
	got := popAll(t, q, nil)
	if len(got) != 1 || !q.HasSynced() {
		t.Fatalf("got %+v", got)
	}
}

// TestDeltaQueueRequeueKeepsInitialOrder: a key of the list requeued
// goes back among the list's keys, before what was queued after the
// list, and HasSynced waits for it.
func TestDeltaQueueRequeueKeepsInitialOrder(t *testing.T) {
	q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{})
	if err := q.Replace([]U{obj("a", "1"), obj("b", "1")}, "1"); err != nil {
		t.Fatal(err)
	}
	if err := q.Add(obj("c", "2")); err != nil { // a watch event after the list
		t.Fatal(err)
	}
	requeued := false
	var order []string
	var initial []bool
	for q.Len() > 0 {
		if err := q.Pop(context.Background(), func(k string, _ informer.Deltas[U], isInitial bool) error {
			if k == "ns/a" && !requeued {
				requeued = true
				return fmt.Errorf("later: %w", informer.ErrRequeue)
			}
			order, initial = append(order, k), append(initial, isInitial)
			return nil
		}); err != nil && !errors.Is(err, informer.ErrRequeue) {
			t.Fatal(err)
		}
		if q.HasSynced() && (!slices.Contains(order, "ns/a") || !slices.Contains(order, "ns/b")) {
			t.Fatalf("synced after popping %v, before the list's keys", order)
		}
	}
	if !slices.Equal(order, []string{"ns/b", "ns/a", "ns/c"}) || !slices.Equal(initial, []bool{true, true, false}) || !q.HasSynced() {
		t.Fatalf("popped %v (initial %v), synced %v; want b, a (initial), then c", order, initial, q.HasSynced())
	}
}

func TestDeltaQueueResync(t *testing.T) {
	store, _ := informer.NewStore[U](nil)
	store.Add(obj("a", "1"))
	store.Add(obj("b", "1"))
	q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{KnownObjects: store})
	_ = q.Update(obj("b", "2"))
	_ = q.Resync()
	got := popAll(t, q, nil)
	types := map[string][]informer.DeltaType{}
	for _, p := range got {
		types[p.key] = p.types
	}
	if !slices.Equal(types["ns/a"], []informer.DeltaType{informer.Sync}) || !slices.Equal(types["ns/b"], []informer.DeltaType{informer.Updated}) {
		t.Fatalf("got %v", types)
	}
}

func TestDeltaQueuePopHonoursContext(t *testing.T) {
	q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Pop(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop on empty queue with done ctx = %v", err)
	}
	q.Close()
	if err := q.Pop(context.Background(), nil); !errors.Is(err, informer.ErrQueueClosed) {
		t.Fatalf("Pop after Close = %v", err)
	}
}

// TestDeltaQueueCloseWakesEveryPop: Close releases every Pop waiting on
// an empty queue, not only one.
func TestDeltaQueueCloseWakesEveryPop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := informer.NewDeltaQueue(informer.DeltaQueueOptions[U]{})
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				errs <- q.Pop(context.Background(), func(string, informer.Deltas[U], bool) error { return nil })
			}()
		}
		synctest.Wait() // all three wait
		q.Close()
		for range 3 {
			if err := <-errs; !errors.Is(err, informer.ErrQueueClosed) {
				t.Fatalf("Pop after Close = %v", err)
			}
		}
	})
}

func TestStoreIndexes(t *testing.T) {
	byApp := informer.Indexers[U]{"app": func(o U) []string { return []string{o.GetLabels()["app"]} }}
	s, err := informer.NewStore(byApp)
	if err != nil {
		t.Fatal(err)
	}
	a := newObj("ns1", "a", map[string]string{"app": "web", "tier": "fe"})
	b := newObj("ns2", "b", map[string]string{"app": "web"})
	s.Add(a)
	s.Add(b)
	if keys, _ := s.IndexKeys("app", "web"); !slices.Equal(keys, []string{"ns1/a", "ns2/b"}) {
		t.Fatalf("app=web: %v", keys)
	}
	if keys, _ := s.IndexKeys(informer.IndexNamespace, "ns2"); !slices.Equal(keys, []string{"ns2/b"}) {
		t.Fatalf("ns2: %v", keys)
	}
	a2 := newObj("ns1", "a", map[string]string{"app": "db"})
	s.Update(a2)
	if keys, _ := s.IndexKeys(informer.IndexLabel, informer.LabelIndexValue("tier", "fe")); len(keys) != 0 {
		t.Fatalf("stale label index: %v", keys)
	}
	if objs, _ := s.ByIndex("app", "db"); len(objs) != 1 || objs[0] != a2 {
		t.Fatalf("app=db: %v", objs)
	}
	s.Delete(b)
	if vals, _ := s.IndexValues("app"); !slices.Equal(vals, []string{"db"}) {
		t.Fatalf("values after delete: %v", vals)
	}
	if _, err := s.ByIndex("nope", "x"); !errors.Is(err, informer.ErrInvalidIndex) {
		t.Fatalf("unknown index: %v", err)
	}
	if err := s.AddIndexers(informer.Indexers[U]{"late": nil}); !errors.Is(err, informer.ErrInvalidIndex) {
		t.Fatalf("AddIndexers of a nil function: %v", err)
	}
	// Added to a filled store, an index takes in what it holds.
	if err := s.AddIndexers(informer.Indexers[U]{"late": func(o U) []string { return []string{o.GetNamespace() + "!"} }}); err != nil {
		t.Fatalf("AddIndexers on a filled store: %v", err)
	}
	if objs, _ := s.ByIndex("late", "ns1!"); len(objs) != 1 || objs[0] != a2 {
		t.Fatalf("late index: %v", objs)
	}
	if got, ok := s.Get("ns1", "a"); !ok || got != a2 {
		t.Fatal("Get")
	}
	s.Replace([]U{b})
	if keys := s.ListKeys(); !slices.Equal(keys, []string{"ns2/b"}) {
		t.Fatalf("after Replace: %v", keys)
	}
	if keys, _ := s.IndexKeys("app", "db"); len(keys) != 0 {
		t.Fatalf("index after Replace: %v", keys)
	}
}

// TestStoreIndexesLazy: an index built on its first lookup, at whatever
// point of a random sequence of writes, answers as one computed from the
// store's content, and stays up to date after.
func TestStoreIndexesLazy(t *testing.T) {
	for seed := range uint64(20) {
		rnd := rand.New(rand.NewPCG(seed, 1))
		s, err := informer.NewStore[U](nil)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 200 {
			name := fmt.Sprintf("o%d", rnd.IntN(20))
			ns := fmt.Sprintf("ns%d", rnd.IntN(3))
			switch rnd.IntN(4) {
			case 0:
				s.Delete(newObj(ns, name, nil))
			case 1:
				s.Replace([]U{newObj(ns, name, map[string]string{"app": "x"})})
			default:
				s.Update(newObj(ns, name, map[string]string{"app": fmt.Sprint(rnd.IntN(3))}))
			}
			if rnd.IntN(10) > 0 {
				continue // look up now and then, so indexes get built at random points
			}
			want := map[string][]string{}
			for _, o := range s.List() {
				v := informer.LabelIndexValue("app", o.GetLabels()["app"])
				want[v] = append(want[v], object.Key(o))
			}
			for v, keys := range want {
				slices.Sort(keys)
				got, err := s.IndexKeys(informer.IndexLabel, v)
				if err != nil || !slices.Equal(got, keys) {
					t.Fatalf("seed %d step %d: %s: %v %v, want %v", seed, step, v, got, err, keys)
				}
			}
			vals, _ := s.IndexValues(informer.IndexLabel)
			if len(vals) != len(want) {
				t.Fatalf("seed %d step %d: values %v, want those of %v", seed, step, vals, want)
			}
		}
	}
}
