package workqueue

import (
	"slices"
	"testing"
)

// queueModel is the specification of Queue in its simplest form: two
// ordered lists and two sets.
type queueModel struct {
	every               int
	normal, low         []int // queued items in hand-out order
	dirty, processing   map[int]bool
	isLow               map[int]bool // priority of a dirty item
	normalsWhileLowWait int
}

func (m *queueModel) add(x int, low bool) {
	if m.dirty[x] {
		if !low && m.isLow[x] {
			m.isLow[x] = false
			if i := slices.Index(m.low, x); i >= 0 {
				m.low = slices.Delete(m.low, i, i+1)
				m.normal = append(m.normal, x)
			}
		}
		return
	}
	m.dirty[x], m.isLow[x] = true, low
	if !m.processing[x] {
		m.enqueue(x)
	}
}

func (m *queueModel) enqueue(x int) {
	if m.isLow[x] {
		m.low = append(m.low, x)
	} else {
		m.normal = append(m.normal, x)
	}
}

// FuzzQueueAgainstModel runs random operation sequences on a Queue and on
// the model and requires the same observable behaviour: Len, which item
// each Get hands out (FIFO per priority, the low-priority bound), and that
// an item is never handed out while being processed.
func FuzzQueueAgainstModel(f *testing.F) {
	f.Add([]byte{0, 5, 10, 2, 2, 3, 2})
	f.Add([]byte{1, 6, 11, 0, 2, 2, 2, 2, 3, 8, 13})
	f.Add([]byte{0, 0, 2, 0, 3, 2, 3})
	f.Add([]byte{1, 0, 5, 10, 15, 20, 2, 2, 2, 2, 2, 2, 7, 12, 17})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const every = 2
		q := New(Config[int]{LowPriorityEvery: every})
		m := &queueModel{every: every, dirty: map[int]bool{}, processing: map[int]bool{}, isLow: map[int]bool{}}
		for i, b := range ops {
			x := int(b/5) % 6
			switch b % 5 {
			case 0:
				q.Add(x)
				m.add(x, false)
			case 1:
				q.AddLowPriority(x)
				m.add(x, true)
			case 2, 4:
				if len(m.normal)+len(m.low) == 0 {
					continue // Get would block
				}
				got, shutdown := q.Get()
				if shutdown {
					t.Fatalf("op %d: unexpected shutdown", i)
				}
				m.checkGet(t, i, got)
			case 3:
				for y := range 6 { // Done the first processing item from x on
					z := (x + y) % 6
					if m.processing[z] {
						q.Done(z)
						delete(m.processing, z)
						if m.dirty[z] {
							m.enqueue(z)
						}
						break
					}
				}
			}
			if want := len(m.normal) + len(m.low); q.Len() != want {
				t.Fatalf("op %d: Len = %d, model %d", i, q.Len(), want)
			}
		}
	})
}

// checkGet applies a Get to the model and checks the queue chose as the
// model allows.
func (m *queueModel) checkGet(t *testing.T, op, got int) {
	t.Helper()
	lowTurn := len(m.low) > 0 && (len(m.normal) == 0 || m.normalsWhileLowWait >= m.every)
	var want int
	if lowTurn {
		want, m.low = m.low[0], m.low[1:]
		m.normalsWhileLowWait = 0
	} else {
		if len(m.low) > 0 {
			m.normalsWhileLowWait++
		} else {
			m.normalsWhileLowWait = 0
		}
		want, m.normal = m.normal[0], m.normal[1:]
	}
	if got != want {
		t.Fatalf("op %d: Get = %d, model %d (normal %v low %v)", op, got, want, m.normal, m.low)
	}
	if m.processing[got] {
		t.Fatalf("op %d: %d handed out while processing", op, got)
	}
	m.processing[got] = true
	delete(m.dirty, got)
	delete(m.isLow, got)
}
