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

	// frameWindow is how many of the newest events keep the watch frames
	// built for them (Config.WatcherBuffer: a watcher further behind is
	// closed once it has read its window). A watcher that is further
	// behind builds its own frame for each event and does not keep it, so
	// frames, each as large as its object, are not pinned for the whole
	// history.
	frameWindow int
}

// checkpointEvery is how often an event keeps the snapshot after it. A kept
// snapshot pins the tree nodes copied by the writes since the previous
// checkpoint that no later write has replaced, for as long as the event is
// in the ring. When every event kept one, a full ring of 100,000 events
// held 1,377 (creates of new keys in order) to 1,957 (updates of random
// keys) bytes per event; with a checkpoint every 16 events, 239 to 1,106
// (BenchmarkRingRetained). A read at an older revision replays at most 15
// writes onto the checkpoint, 5 to 50 µs at 100,000 objects, outside the
// lock.
const checkpointEvery = 16

func newRing(capacity int, rev int64, snap tree, base uint64, frameWindow int) *ring {
	return &ring{buf: make([]*event, min(capacity, 1024)), base: base, startRev: rev, startSnap: snap,
		frameWindow: frameWindow}
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
	if r.n >= r.frameWindow {
		r.buf[(r.head+r.n-r.frameWindow)%len(r.buf)].releaseFrames()
	}
	ev.seq = r.nextSeq()
	ev.snap, ev.held = snap, true
	r.buf[(r.head+r.n)%len(r.buf)] = ev
	r.n++
}

// recent reports whether the event with the given seq is among the
// frameWindow newest, whose frames are kept.
func (r *ring) recent(seq uint64) bool { return r.nextSeq()-seq <= uint64(r.frameWindow) }

func (r *ring) grow(size int) {
	nb := make([]*event, size)
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = nb, 0
}

// pop drops the oldest event.
func (r *ring) pop() { r.drop(1) }

// drop drops the k oldest events; the state after the last of them becomes
// the start state, rebuilt as a read at its revision would be (at most
// checkpointEvery-1 writes replayed, however many events go).
func (r *ring) drop(k int) {
	if k <= 0 {
		return
	}
	base, replay := r.plan(k)
	r.startSnap = replayOnto(base, replay)
	r.startRev = r.buf[(r.head+k-1)%len(r.buf)].rev
	for range k {
		r.buf[r.head] = nil
		r.head = (r.head + 1) % len(r.buf)
	}
	r.n -= k
	r.base += uint64(k)
}

// seqAfter returns the seq of the first event with revision > rev; rev
// must be >= startRev.
func (r *ring) seqAfter(rev int64) uint64 {
	i := sort.Search(r.n, func(i int) bool { return r.buf[(r.head+i)%len(r.buf)].rev > rev })
	return r.base + uint64(i)
}

// snapshotAt returns the state at rev, which must be >= startRev.
func (r *ring) snapshotAt(rev int64) tree {
	return replayOnto(r.snapshotPlan(rev))
}

// snapshotPlan returns what makes the state at rev (>= startRev): a
// snapshot and the events to replay onto it, at most checkpointEvery-1.
// Events do not change once pushed, so the caller may replay them after
// releasing the lock.
func (r *ring) snapshotPlan(rev int64) (tree, []*event) {
	// The events before the first one after rev are those at or before it.
	return r.plan(int(r.seqAfter(rev) - r.base))
}

// plan returns a snapshot and the events to replay onto it for the state
// after the i oldest events.
func (r *ring) plan(i int) (tree, []*event) {
	j := i
	for j > 0 && !r.buf[(r.head+j-1)%len(r.buf)].held {
		j--
	}
	base := r.startSnap
	if j > 0 {
		base = r.buf[(r.head+j-1)%len(r.buf)].snap
	}
	if j == i {
		return base, nil
	}
	replay := make([]*event, 0, i-j)
	for ; j < i; j++ {
		replay = append(replay, r.buf[(r.head+j)%len(r.buf)])
	}
	return base, replay
}

// replayOnto returns t with the events' writes made, in order.
func replayOnto(t tree, events []*event) tree {
	for _, ev := range events {
		t = ev.applyTo(t)
	}
	return t
}
