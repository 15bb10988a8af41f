package workqueue

import "testing"

func TestFifoAcrossBlocks(t *testing.T) {
	var f fifo[int]
	next, want := 0, 0
	// Interleave pushes and pops so the ring crosses many block borders,
	// empties completely, and refills.
	for round := range 5 {
		for range 3*blockSize + round {
			f.push(entry[int]{item: next, seq: uint64(next)})
			next++
		}
		for f.len() > round*7 {
			if e := f.pop(); e.item != want {
				t.Fatalf("pop = %d, want %d", e.item, want)
			}
			want++
		}
	}
	for f.len() > 0 {
		if e := f.pop(); e.item != want {
			t.Fatalf("pop = %d, want %d", e.item, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("popped %d entries, pushed %d", want, next)
	}
}
