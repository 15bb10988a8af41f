package storage

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestMemo(t *testing.T) {
	var nilMemo *Memo
	if _, ok := nilMemo.Peek(); ok {
		t.Fatal("a nil Memo peeks built")
	}
	var m Memo
	if _, ok := m.Peek(); ok {
		t.Fatal("Peek before Get")
	}
	builds := 0
	for range 2 {
		b, err := m.Get(func() ([]byte, error) { builds++; return []byte("x"), nil })
		if string(b) != "x" || err != nil {
			t.Fatalf("Get = %q, %v", b, err)
		}
	}
	if b, ok := m.Peek(); !ok || string(b) != "x" || builds != 1 {
		t.Fatalf("Peek = %q, %v after %d builds", b, ok, builds)
	}
	var failed Memo
	failed.Get(func() ([]byte, error) { return nil, errors.New("bad") })
	if _, ok := failed.Peek(); ok {
		t.Fatal("Peek of a failed build")
	}
}

// TestMemoConcurrent: readers asking while the first builds wait for its
// build and get its bytes; a build may read another Memo; a build that
// panics leaves the Memo failed for good, its waiters released.
func TestMemoConcurrent(t *testing.T) {
	var m, inner Memo
	var builds atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	got := make([][]byte, 16)
	for i := range got {
		wg.Go(func() {
			got[i], _ = m.Get(func() ([]byte, error) {
				builds.Add(1)
				<-release
				return inner.Get(func() ([]byte, error) { return []byte("built"), nil })
			})
		})
	}
	close(release)
	wg.Wait()
	for i, b := range got {
		if string(b) != "built" || (i > 0 && &b[0] != &got[0][0]) {
			t.Fatalf("reader %d got %q, not the one build's bytes", i, b)
		}
	}
	if n := builds.Load(); n != 1 {
		t.Fatalf("%d builds", n)
	}
	var p Memo
	func() {
		defer func() { _ = recover() }()
		p.Get(func() ([]byte, error) { panic("boom") })
	}()
	if b, err := p.Get(func() ([]byte, error) { return []byte("again"), nil }); b != nil || err == nil {
		t.Fatalf("after a panicking build: %q, %v; want no bytes and an error", b, err)
	}
	if _, ok := p.Peek(); ok {
		t.Fatal("Peek after a panicking build reports it built")
	}
}

// TestMemoizeRun: one build per key, shared by concurrent callers; at
// most maxRunForms forms kept; a nil memo builds every time.
func TestMemoizeRun(t *testing.T) {
	var m RunMemo
	var mu sync.Mutex
	builds := map[string]int{}
	build := func(key string) func() (int, error) {
		return func() (int, error) {
			mu.Lock()
			defer mu.Unlock()
			builds[key]++
			return len(key), nil
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, k := range []string{"a", "bb", "ccc"} {
				if v, err := MemoizeRun(&m, k, build(k)); v != len(k) || err != nil {
					t.Errorf("MemoizeRun(%q) = %d, %v", k, v, err)
				}
			}
		})
	}
	wg.Wait()
	for _, k := range []string{"a", "bb", "ccc"} {
		if builds[k] != 1 {
			t.Fatalf("%q built %d times", k, builds[k])
		}
	}
	for _, k := range []string{"d", "e", "e"} {
		MemoizeRun(&m, k, build(k))
	}
	if builds["d"] != 1 || builds["e"] != 2 {
		t.Fatalf("beyond %d forms: d built %d times, e %d", maxRunForms, builds["d"], builds["e"])
	}
	for range 2 {
		MemoizeRun(nil, "n", build("n"))
	}
	if builds["n"] != 2 {
		t.Fatalf("nil memo built %d times", builds["n"])
	}
}
