package cache

import "sort"

// ring is the recent history: the events with revision > startRev, oldest
// first, and the state at startRev. Every event carries the snapshot after
// it, so the ring answers "state at revision N" for any N >= startRev.
//
// Sequence numbers are dense: the event at index i has seq base+i. A
// watcher's cursor is the seq of the next event it will read, so finding
// its place costs nothing. Not safe for concurrent use; Cache.mu guards it.
type ring struct {
	buf  []*event // circular
	head int      // index in buf of the oldest event
	n    int      // events held
	base uint64   // seq of the oldest event (or of the next one, if n == 0)

	startRev  int64 // revision of the state before the oldest event
	startSnap tree  // state at startRev
}

func newRing(capacity int, rev int64, snap tree, base uint64) *ring {
	return &ring{buf: make([]*event, min(capacity, 1024)), base: base, startRev: rev, startSnap: snap}
}

// nextSeq is the seq the next appended event gets.
func (r *ring) nextSeq() uint64 { return r.base + uint64(r.n) }

// at returns the event with the given seq, or nil if it is not held.
func (r *ring) at(seq uint64) *event {
	if seq < r.base || seq >= r.nextSeq() {
		return nil
	}
	return r.buf[(r.head+int(seq-r.base))%len(r.buf)]
}

func (r *ring) push(ev *event, capacity int) {
	if r.n == len(r.buf) {
		if r.n < capacity {
			r.grow(min(2*len(r.buf), capacity))
		} else {
			r.pop()
		}
	}
	ev.seq = r.nextSeq()
	r.buf[(r.head+r.n)%len(r.buf)] = ev
	r.n++
}

func (r *ring) grow(size int) {
	nb := make([]*event, size)
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = nb, 0
}

// pop drops the oldest event; its snapshot becomes the start state.
func (r *ring) pop() {
	ev := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	r.base++
	r.startRev, r.startSnap = ev.rev, ev.snap
}

func (r *ring) oldest() *event { return r.at(r.base) }

// seqAfter returns the seq of the first event with revision > rev; rev
// must be >= startRev.
func (r *ring) seqAfter(rev int64) uint64 {
	i := sort.Search(r.n, func(i int) bool { return r.buf[(r.head+i)%len(r.buf)].rev > rev })
	return r.base + uint64(i)
}

// snapshotAt returns the state at rev, which must be >= startRev.
func (r *ring) snapshotAt(rev int64) tree {
	i := sort.Search(r.n, func(i int) bool { return r.buf[(r.head+i)%len(r.buf)].rev > rev })
	if i == 0 {
		return r.startSnap
	}
	return r.buf[(r.head+i-1)%len(r.buf)].snap
}
