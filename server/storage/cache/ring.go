package cache

import "sort"

// ring is the recent history: the events with revision > startRev, oldest
// first, and the state at startRev. The newest event and every
// checkpointEvery-th one carry the snapshot after them; the state after
// any other is rebuilt from the checkpoint before it, so the ring answers
// "state at revision N" for any N >= startRev.
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

// checkpointEvery is how often an event keeps the snapshot after it. A kept
// snapshot pins the nodes its write copied, about 2·ln(n) of them (1.5 KB
// at 100,000 objects), for as long as the event is in the ring: a full
// ring of 102,400 events kept ~150 MB when every event kept one. With a
// checkpoint every 16 events, a read at an older revision replays at most
// 15 writes (a few microseconds each) onto a copy of the checkpoint.
const checkpointEvery = 16

// frameWindow is how many of the newest events keep the watch frames
// built for them. A watcher further behind than this builds its own frame
// for each event it reads and does not keep it, so frames are not pinned
// for the whole history (each is as large as its object).
const frameWindow = 4096

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

// push appends ev, whose write left the state snap.
func (r *ring) push(ev *event, snap tree, capacity int) {
	if r.n == len(r.buf) {
		if r.n < capacity {
			r.grow(min(2*len(r.buf), capacity))
		} else {
			r.pop()
		}
	}
	if r.n > 0 {
		if last := r.buf[(r.head+r.n-1)%len(r.buf)]; last.seq%checkpointEvery != 0 {
			last.snap, last.held = tree{}, false
		}
	}
	if r.n >= frameWindow {
		r.buf[(r.head+r.n-frameWindow)%len(r.buf)].releaseFrames()
	}
	ev.seq = r.nextSeq()
	ev.snap, ev.held = snap, true
	r.buf[(r.head+r.n)%len(r.buf)] = ev
	r.n++
}

// recent reports whether the event with the given seq is among the
// frameWindow newest, whose frames are kept.
func (r *ring) recent(seq uint64) bool { return r.nextSeq()-seq <= frameWindow }

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
	if ev.held {
		r.startSnap = ev.snap
	} else {
		r.startSnap = ev.applyTo(r.startSnap)
	}
	r.startRev = ev.rev
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
	// Events [0, i) are those at or before rev.
	i := sort.Search(r.n, func(i int) bool { return r.buf[(r.head+i)%len(r.buf)].rev > rev })
	j := i
	for j > 0 && !r.buf[(r.head+j-1)%len(r.buf)].held {
		j--
	}
	t := r.startSnap
	if j > 0 {
		t = r.buf[(r.head+j-1)%len(r.buf)].snap
	}
	for ; j < i; j++ {
		t = r.buf[(r.head+j)%len(r.buf)].applyTo(t)
	}
	return t
}
