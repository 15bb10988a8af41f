package workqueue

// fifo is a growable ring of queue entries. It is not safe for concurrent
// use; the Queue's mutex guards it.
//
// Entries are never removed from the middle: an entry that stops being valid
// (its item was promoted to normal priority, or the queue shut down) stays
// in place and is skipped when popped, which keeps every operation O(1)
// amortised.
type fifo[T comparable] struct {
	buf  []entry[T] // len(buf) is a power of two, or zero
	head int        // index of the oldest entry
	n    int        // number of entries, valid or stale
}

// entry is one slot in a fifo. seq identifies the enqueue that made it: the
// entry is valid only while the item's state still carries the same seq.
type entry[T comparable] struct {
	item T
	seq  uint64
}

func (f *fifo[T]) push(e entry[T]) {
	if f.n == len(f.buf) {
		f.grow()
	}
	f.buf[(f.head+f.n)&(len(f.buf)-1)] = e
	f.n++
}

// pop removes and returns the oldest entry. It must not be called on an
// empty fifo.
func (f *fifo[T]) pop() entry[T] {
	e := f.buf[f.head]
	f.buf[f.head] = entry[T]{} // let the item be collected
	f.head = (f.head + 1) & (len(f.buf) - 1)
	f.n--
	return e
}

func (f *fifo[T]) len() int { return f.n }

func (f *fifo[T]) grow() {
	size := 2 * len(f.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]entry[T], size)
	// Unroll the ring so the oldest entry lands at index 0.
	k := copy(buf, f.buf[f.head:])
	copy(buf[k:], f.buf[:f.head])
	f.buf, f.head = buf, 0
}

// reset drops every entry and the backing array.
func (f *fifo[T]) reset() { *f = fifo[T]{} }
