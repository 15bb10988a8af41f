package cache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestTreePersistent checks every snapshot against a map copied at the
// same point, after random puts and deletes, including rank queries.
func TestTreePersistent(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var cur tree
		model := map[string]int64{}
		type snap struct {
			t tree
			m map[string]int64
		}
		var snaps []snap
		for i := range 400 {
			k := fmt.Sprintf("/k/%03d", rng.IntN(150))
			if rng.IntN(3) == 0 {
				cur = cur.Delete(k)
				delete(model, k)
			} else {
				cur = cur.Put(k, &entry{key: k, rev: int64(i)})
				model[k] = int64(i)
			}
			if i%20 == 0 {
				m := make(map[string]int64, len(model))
				for k, v := range model {
					m[k] = v
				}
				snaps = append(snaps, snap{cur, m})
			}
		}
		snaps = append(snaps, snap{cur, model})
		for i, s := range snaps {
			if err := checkTree(s.t, s.m, rng); err != nil {
				t.Fatalf("seed %d snapshot %d: %v", seed, i, err)
			}
		}
	}
}

func checkTree(tr tree, m map[string]int64, rng *rand.Rand) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if tr.Len() != len(keys) {
		return fmt.Errorf("Len %d, want %d", tr.Len(), len(keys))
	}
	if err := checkHeap(tr.root); err != nil {
		return err
	}
	var got []string
	it := tr.Seek("")
	for e := it.Next(); e != nil; e = it.Next() {
		if e.rev != m[e.key] {
			return fmt.Errorf("%s rev %d, want %d", e.key, e.rev, m[e.key])
		}
		got = append(got, e.key)
	}
	if !slices.Equal(got, keys) {
		return fmt.Errorf("keys %v, want %v", got, keys)
	}
	for range 20 {
		from := fmt.Sprintf("/k/%03d", rng.IntN(160))
		to := fmt.Sprintf("/k/%03d", rng.IntN(160))
		want := 0
		for _, k := range keys {
			if k >= from && k < to {
				want++
			}
		}
		if n := tr.CountRange(from, to); n != want {
			return fmt.Errorf("CountRange(%s,%s) = %d, want %d", from, to, n, want)
		}
		i, _ := slices.BinarySearch(keys, from)
		if e := tr.Seek(from).Next(); (e == nil) != (i == len(keys)) || (e != nil && e.key != keys[i]) {
			return fmt.Errorf("Seek(%s) = %v", from, e)
		}
		if tr.Get(from) != nil != (m[from] != 0 || slices.Contains(keys, from)) {
			return fmt.Errorf("Get(%s) wrong", from)
		}
	}
	return nil
}

func checkHeap(n *node) error {
	if n == nil {
		return nil
	}
	for _, c := range []*node{n.left, n.right} {
		if c != nil && c.prio > n.prio {
			return fmt.Errorf("heap order broken at %s", n.key)
		}
	}
	if n.size != 1+n.left.count()+n.right.count() {
		return fmt.Errorf("size wrong at %s", n.key)
	}
	if err := checkHeap(n.left); err != nil {
		return err
	}
	return checkHeap(n.right)
}

func TestBuildSorted(t *testing.T) {
	for _, n := range []int{0, 1, 2, 10, 1000} {
		var es []*entry
		m := map[string]int64{}
		for i := range n {
			k := fmt.Sprintf("/k/%05d", i)
			es = append(es, &entry{key: k, rev: int64(i + 1)})
			m[k] = int64(i + 1)
		}
		tr := buildSorted(es)
		if err := checkTree(tr, m, rand.New(rand.NewPCG(1, 2))); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		// Writes to the built tree must not change it.
		if n > 0 {
			tr2 := tr.Delete(es[0].key).Put("/k/x", &entry{key: "/k/x"})
			if err := checkTree(tr, m, rand.New(rand.NewPCG(1, 2))); err != nil {
				t.Fatalf("n=%d after writes: %v", n, err)
			}
			if tr2.Len() != n {
				t.Fatalf("n=%d: len %d", n, tr2.Len())
			}
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/a/", "/a0"}, {"a\xff", "b"}, {"\xff\xff", ""}, {"", ""},
	} {
		if got := prefixEnd(c.in); got != c.want {
			t.Errorf("prefixEnd(%q) = %q, want %q", c.in, got, c.want)
		}
		if c.want != "" && !strings.HasPrefix(c.in, "\xff") && c.want <= c.in {
			t.Errorf("prefixEnd(%q) not greater", c.in)
		}
	}
}
