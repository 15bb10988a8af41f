package cache

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
)

// runContent is what a run memo was first handed out for: the keys and
// entries of its items.
type runContent []*entry

// TestPageRuns checks the runs of pages cut from random trees, old
// snapshots among them, after random writes:
//   - a page's items are the model's, whatever its runs;
//   - runs are in order, disjoint, inside the page, runMin..runMax long,
//     and absent under a predicate;
//   - a run memo handed out twice covers the very same entries both times
//     (a memo must never outlive the items it encodes);
//   - an unpaged list is almost all runs, and one write keeps most memos.
func TestPageRuns(t *testing.T) {
	c := &Cache{}
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 11))
		n := []int{0, 40, 700, 3000, 6000, 9000}[seed]
		var cur tree
		model := map[string]*entry{}
		put := func(k string, rev int64) {
			e := &entry{key: k, rev: rev}
			cur = cur.Put(k, e)
			model[k] = e
		}
		for i := range n {
			put(fmt.Sprintf("/p/%06d", rng.IntN(4*n)), int64(i))
			if i%10 == 0 {
				put(fmt.Sprintf("/q/%d", i), int64(i)) // outside the prefix
			}
		}
		seen := map[*storage.RunMemo]runContent{}
		check := func(snap tree, m map[string]*entry, start string, limit int64, pred storage.Predicate) storage.ListPage {
			t.Helper()
			page, err := c.page(snap, 1, "/p/", start, storage.GetListOptions{Limit: limit, Predicate: pred})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for k := range m {
				if strings.HasPrefix(k, "/p/") && k >= start {
					want = append(want, k)
				}
			}
			slices.Sort(want)
			if limit > 0 && int64(len(want)) > limit {
				want = want[:limit]
			}
			if pred.Empty() {
				got := make([]string, len(page.Items))
				for i, kv := range page.Items {
					got[i] = kv.Key
				}
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d start %q limit %d: got %d items, want %d", seed, start, limit, len(got), len(want))
				}
			} else if len(page.Runs) != 0 {
				t.Fatalf("seed %d: %d runs under a predicate", seed, len(page.Runs))
			}
			at := 0
			for _, r := range page.Runs {
				if r.Start < at || r.End > len(page.Items) || r.End-r.Start < runMin || r.End-r.Start > runMax {
					t.Fatalf("seed %d: run [%d,%d) after %d in a page of %d", seed, r.Start, r.End, at, len(page.Items))
				}
				at = r.End
				content := make(runContent, 0, r.End-r.Start)
				for _, kv := range page.Items[r.Start:r.End] {
					content = append(content, m[kv.Key])
				}
				if old, ok := seen[r.Memo]; ok && !slices.Equal(old, content) {
					t.Fatalf("seed %d: a run memo reused for other items (%d then %d items, first %s then %s)",
						seed, len(old), len(content), old[0].key, content[0].key)
				}
				seen[r.Memo] = content
			}
			return page
		}
		type snapshot struct {
			t tree
			m map[string]*entry
		}
		var snaps []snapshot
		for i := range 300 {
			k := fmt.Sprintf("/p/%06d", rng.IntN(4*n+1))
			if rng.IntN(4) == 0 {
				cur = cur.Delete(k)
				delete(model, k)
			} else {
				put(k, int64(n+i))
			}
			if i%25 == 0 {
				snaps = append(snaps, snapshot{cur, maps.Clone(model)})
			}
			s := snaps[rng.IntN(len(snaps))]
			start := fmt.Sprintf("/p/%06d", rng.IntN(4*n+1))
			if rng.IntN(3) == 0 {
				start = ""
			}
			limit := []int64{0, 1, 100, 500, 5000}[rng.IntN(5)]
			check(s.t, s.m, start, limit, storage.Predicate{})
			if i%50 == 0 {
				check(s.t, s.m, start, limit, labelPred(t, "app=a"))
			}
		}
		if n < 3000 {
			continue
		}
		// An unpaged list is mostly runs, and after one more write the
		// next list reuses most of their memos. How much the runs cover
		// depends on the tree's shape, which is random per process (node
		// priorities hash keys with a per-process seed): over 200 shapes,
		// runs covered 85-98% of 3,000 random keys' list and 91-98% of
		// 6,000's.
		before := check(cur, model, "", 0, storage.Predicate{})
		covered := 0
		for _, r := range before.Runs {
			covered += r.End - r.Start
		}
		if covered < len(before.Items)*8/10 {
			t.Errorf("seed %d: runs cover %d of %d items", seed, covered, len(before.Items))
		}
		put(fmt.Sprintf("/p/%06d", rng.IntN(4*n)), int64(n+1000))
		after := check(cur, model, "", 0, storage.Predicate{})
		old := map[*storage.RunMemo]bool{}
		for _, r := range before.Runs {
			old[r.Memo] = true
		}
		kept := 0
		for _, r := range after.Runs {
			if old[r.Memo] {
				kept++
			}
		}
		if kept < len(after.Runs)-3 {
			t.Errorf("seed %d: one write kept %d of %d run memos", seed, kept, len(after.Runs))
		}
	}
}
