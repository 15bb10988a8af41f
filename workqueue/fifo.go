package workqueue

// fifo is a queue of entries stored in fixed-size blocks linked head to
// tail. It is not safe for concurrent use; the Queue's mutex guards it.
//
// Blocks rather than one growing ring: push and pop are O(1) in the worst
// case, not just amortised, so an Add into a queue of a million items never
// stalls (holding the queue's lock) to copy them all.
//
// Entries are never removed from the middle: an entry that stops being valid
// stays in place and is skipped when popped.
type fifo[T comparable] struct {
	head, tail *block[T] // nil when empty
	headIdx    int       // next entry to pop in head
	tailIdx    int       // next free slot in tail
	n          int       // entries, valid or stale
	spare      *block[T] // one emptied block kept for reuse
}

const blockSize = 256

type block[T comparable] struct {
	entries [blockSize]entry[T]
	next    *block[T]
}

// entry is one slot in a fifo. seq identifies the enqueue that made it, so a
// stale low-priority entry can be told from the item's current one.
type entry[T comparable] struct {
	item T
	seq  uint64
}

func (f *fifo[T]) push(e entry[T]) {
	if f.tail == nil || f.tailIdx == blockSize {
		b := f.newBlock()
		if f.tail == nil {
			f.head, f.headIdx = b, 0
		} else {
			f.tail.next = b
		}
		f.tail, f.tailIdx = b, 0
	}
	f.tail.entries[f.tailIdx] = e
	f.tailIdx++
	f.n++
}

// pop removes and returns the oldest entry. It must not be called on an
// empty fifo.
func (f *fifo[T]) pop() entry[T] {
	b := f.head
	e := b.entries[f.headIdx]
	b.entries[f.headIdx] = entry[T]{} // let the item be collected
	f.headIdx++
	f.n--
	switch {
	case f.n == 0:
		// Empty: keep the block in place and start over in it.
		f.headIdx, f.tailIdx = 0, 0
	case f.headIdx == blockSize:
		f.head, f.headIdx = b.next, 0
		b.next = nil
		f.spare = b
	}
	return e
}

func (f *fifo[T]) len() int { return f.n }

func (f *fifo[T]) newBlock() *block[T] {
	if b := f.spare; b != nil {
		f.spare = nil
		return b
	}
	return new(block[T])
}

// reset drops every entry and block.
func (f *fifo[T]) reset() { *f = fifo[T]{} }
