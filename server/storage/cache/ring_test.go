package cache

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/listwatch/listwatch/wire"
)

// TestRingSnapshots: the state the ring gives for every revision it covers
// is the state after that revision's write, whether the event holds its
// snapshot or the ring replays writes onto the checkpoint before it, as
// events leave by capacity or many at once (as by age); no read replays
// more than checkpointEvery-1 writes; and only checkpoints and the newest
// event hold a snapshot.
func TestRingSnapshots(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const capacity = 100
	var cur tree
	model := map[string]*entry{}
	states := map[int64]map[string]*entry{1: {}}
	r := newRing(capacity, 1, cur, 0, capacity)
	for rev := int64(2); rev < 2000; rev++ {
		key := fmt.Sprintf("k%02d", rng.IntN(40))
		ev := &event{rev: rev}
		if old, ok := model[key]; ok && rng.IntN(3) == 0 {
			ev.prev = old
			delete(model, key)
			cur = cur.Delete(key)
		} else {
			ev.cur = &entry{key: key, rev: rev}
			model[key] = ev.cur
			cur = cur.Put(key, ev.cur)
		}
		r.push(ev, cur, capacity)
		states[rev] = maps.Clone(model)
		if rev%97 == 0 {
			r.drop(rng.IntN(r.n + 1))
		}
		if rev%7 != 0 {
			continue
		}
		for v := r.startRev; v <= rev; v++ {
			if _, replay := r.snapshotPlan(v); len(replay) >= checkpointEvery {
				t.Fatalf("the state at %d replays %d writes", v, len(replay))
			}
			if err := sameState(r.snapshotAt(v), states[v]); err != nil {
				t.Fatalf("after the write at %d, state at %d (history from %d): %v", rev, v, r.startRev, err)
			}
		}
		held := 0
		for i := range r.n {
			if r.buf[(r.head+i)%len(r.buf)].held {
				held++
			}
		}
		if limit := r.n/checkpointEvery + 2; held > limit {
			t.Fatalf("%d of %d events hold a snapshot, want at most %d", held, r.n, limit)
		}
	}
}

func sameState(got tree, want map[string]*entry) error {
	var keys []string
	for it := got.Seek(""); ; {
		e := it.Next()
		if e == nil {
			break
		}
		if want[e.key] != e {
			return fmt.Errorf("holds %s at %d, want %v", e.key, e.rev, want[e.key])
		}
		keys = append(keys, e.key)
	}
	if len(keys) != len(want) {
		return fmt.Errorf("holds %v, want %v", keys, slices.Sorted(maps.Keys(want)))
	}
	return nil
}

// TestRingFrameWindow: frames are shared while their event is among the
// frameWindow newest and dropped after; a watcher that reads an older
// event builds the same frame without keeping it.
func TestRingFrameWindow(t *testing.T) {
	const frameWindow = 100
	const capacity = 2 * frameWindow
	r := newRing(capacity, 1, tree{}, 0, frameWindow)
	var cur tree
	push := func(rev int64) *event {
		key := fmt.Sprint("k", rev)
		e := &entry{key: key, value: fmt.Appendf(nil, `{"metadata":{"name":%q}}`, key), rev: rev}
		cur = cur.Put(key, e)
		ev := &event{rev: rev, cur: e}
		r.push(ev, cur, capacity)
		return ev
	}
	first := push(2)
	_, _, line, _, _, _ := first.render(false, true, r.recent(first.seq))
	_, _, again, _, _, _ := first.render(false, true, r.recent(first.seq))
	if &line[0] != &again[0] {
		t.Fatal("a recent event's frame was built twice")
	}
	for rev := int64(3); r.recent(first.seq); rev++ {
		push(rev)
	}
	if first.frames.Load() != nil {
		t.Fatal("an event past the frame window still holds its frames")
	}
	typ, _, old, _, _, ok := first.render(false, true, r.recent(first.seq))
	if want := wire.EventLine(wire.Added, first.cur.value); !ok || typ != wire.Added || !bytes.Equal(old, want) {
		t.Fatalf("old event rendered %v %s %q, want ADDED %q", ok, typ, old, want)
	}
	if first.frames.Load() != nil {
		t.Fatal("a frame built for an event past the window was kept")
	}
}

// BenchmarkRingRetained reports the heap a full history keeps per event
// (bytes/event) beyond the objects themselves, as a watch cache holds a
// fill of 100,000 objects for HistoryAge: 100,000 creates of new keys in
// order, or 100,000 updates of random keys of 100,000 objects. It also
// reports what a read at a revision between checkpoints costs (ns/replay,
// the most writes it replays).
func BenchmarkRingRetained(b *testing.B) {
	const n = 100_000
	entries := make([]*entry, n)
	for i := range entries {
		key := fmt.Sprintf("/registry/configmaps/ns/cm-%06d", i)
		entries[i] = &entry{key: key, value: make([]byte, 1024), rev: int64(i + 2)}
	}
	for _, tc := range []struct {
		name   string
		update bool
	}{{"creates", false}, {"random-updates", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var start tree
			writes := entries
			if tc.update {
				start = buildSorted(entries)
				rng := rand.New(rand.NewPCG(3, 4))
				writes = make([]*entry, n)
				for i := range writes {
					old := entries[rng.IntN(n)]
					writes[i] = &entry{key: old.key, value: old.value, rev: int64(i + 2)}
				}
			}
			var perEvent, replay float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				r := newRing(n, 1, start, 0, n)
				cur := start
				for i, e := range writes {
					cur = cur.Put(e.key, e)
					r.push(&event{rev: int64(i + 2), cur: e}, cur, n)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perEvent = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
				// The revision just before a checkpoint replays
				// checkpointEvery-1 writes.
				rev := int64(n - n%checkpointEvery - 1 + 2 - checkpointEvery)
				began := time.Now()
				const reads = 1000
				for range reads {
					if r.snapshotAt(rev).Len() == 0 {
						b.Fatal("empty snapshot")
					}
				}
				replay = float64(time.Since(began).Nanoseconds()) / reads
				runtime.KeepAlive(r)
			}
			b.ReportMetric(perEvent, "bytes/event")
			b.ReportMetric(replay, "ns/replay")
		})
	}
}
