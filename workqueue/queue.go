package workqueue

import (
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Queue. The zero Config is valid: no metrics, the
// default controller rate limiter, the default low-priority bound.
type Config[T comparable] struct {
	// Name labels the queue's metrics.
	Name string
	// RateLimiter decides how long AddRateLimited waits. Nil means
	// DefaultControllerRateLimiter.
	RateLimiter RateLimiter[T]
	// Metrics, when set, receives the queue's measurements. Nil records
	// nothing and skips the clock reads metrics need.
	Metrics MetricsProvider
	// LowPriorityEvery bounds the wait of low-priority items: while both
	// kinds are queued, at most LowPriorityEvery normal items are handed
	// out in a row before the oldest low-priority item is. Zero means
	// DefaultLowPriorityEvery.
	LowPriorityEvery int
}

// DefaultLowPriorityEvery is the default Config.LowPriorityEvery.
const DefaultLowPriorityEvery = 10

// Queue is a work queue of comparable items: deduplicating, fair, with
// delayed and rate-limited adds and two priorities. See the package doc for
// its guarantees. Create one with New; it is safe for concurrent use.
//
// Lock order: a shard's mu, then Queue.mu. Get pops under Queue.mu, releases
// it, then marks the item under its shard's mu; nothing takes a shard lock
// while holding Queue.mu.
type Queue[T comparable] struct {
	// shards hold the per-item state (dirty, processing, priority). An Add
	// of an item that is already dirty touches only its shard.
	shards shards[T]

	// shuttingDown is written under mu, and read under a shard lock (or
	// mu) by adds: see shutDown for why that is enough.
	shuttingDown atomic.Bool
	// processing counts items handed out and not yet Done. Incremented
	// under mu; Done decrements it without mu and then takes mu to
	// broadcast idle only if it reached zero during shutdown.
	processing atomic.Int64

	// mu guards every field below.
	mu sync.Mutex
	// ready is signalled when an item is queued, broadcast at shutdown.
	ready sync.Cond
	// idle is broadcast when the last processing item is Done in shutdown.
	idle sync.Cond
	// normal and low hold the queued items in hand-out order. Every normal
	// entry is valid; a low entry is valid only if lowSeq still maps its
	// item to its seq (a normal Add moves a low item to normal).
	normal, low fifo[T]
	lowSeq      map[T]uint64
	lastSeq     uint64
	// liveNormal and liveLow count valid entries; their sum is Len.
	liveNormal, liveLow int
	// normalStreak counts normal hand-outs in a row while low items wait.
	normalStreak int
	lowEvery     int
	// delayed holds AddAfter items that are not ready yet.
	delayed delayHeap[T]
	// wakeDelay (capacity 1) tells Run that the earliest ready time moved
	// or the queue shut down.
	wakeDelay chan struct{}
	// started holds when each processing item was handed out, for the
	// unfinished-work gauges; addedAt when each dirty item was added, for
	// the queue-duration histogram. Maintained only with metrics. addedAt
	// is guarded by addedMu, not mu, because adds write it under a shard
	// lock (lock order: shard, then addedMu; nothing else is held with it).
	started map[T]time.Time
	addedMu sync.Mutex
	addedAt map[T]time.Time

	limiter RateLimiter[T]
	metrics QueueMetrics // nil when off; safe for concurrent use
}

// New returns an empty queue. It starts no goroutine: call Run to make
// AddAfter and AddRateLimited deliver their items (see Run).
func New[T comparable](cfg Config[T]) *Queue[T] {
	q := &Queue[T]{
		lowSeq:    make(map[T]uint64),
		wakeDelay: make(chan struct{}, 1),
		limiter:   cfg.RateLimiter,
		lowEvery:  cfg.LowPriorityEvery,
	}
	q.shards.init()
	q.delayed.index = make(map[T]int)
	q.ready.L = &q.mu
	q.idle.L = &q.mu
	if q.limiter == nil {
		q.limiter = DefaultControllerRateLimiter[T]()
	}
	if q.lowEvery <= 0 {
		q.lowEvery = DefaultLowPriorityEvery
	}
	if cfg.Metrics != nil {
		q.started = make(map[T]time.Time)
		q.addedAt = make(map[T]time.Time)
		q.metrics = cfg.Metrics.NewQueueMetrics(cfg.Name, q.snapshot)
	}
	return q
}

// Add queues item for processing at normal priority. An item that is
// already queued keeps its place (and is raised to normal priority if it
// was low); an item being processed is queued again when it is Done. Add
// does nothing after shutdown.
func (q *Queue[T]) Add(item T) { q.add(item, false) }

// AddLowPriority queues item behind every normal item, for work that is
// not caused by a change (periodic resyncs). A low-priority item is handed
// out only when no normal item is queued, or after LowPriorityEvery normal
// items in a row, so it waits at most about
// (its place among low items + 1) × (LowPriorityEvery + 1) hand-outs.
// An item already queued at normal priority stays there.
func (q *Queue[T]) AddLowPriority(item T) { q.add(item, true) }

func (q *Queue[T]) add(item T, low bool) {
	s, tag := q.shards.of(item)
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.shuttingDown.Load() {
		return
	}
	i := s.items.find(tag, item)
	if i >= 0 && s.items.slots[i].flags&flagDirty != 0 {
		// The fast, common path: already waiting. Only a promotion from
		// low to normal priority has anything to do.
		st := &s.items.slots[i]
		if !low && st.flags&flagLow != 0 {
			st.flags &^= flagLow
			if st.flags&flagProcessing == 0 {
				q.promote(item)
			}
		}
		return
	}
	if q.metrics != nil {
		q.addedMu.Lock()
		q.addedAt[item] = time.Now()
		q.addedMu.Unlock()
		q.metrics.Added()
	}
	flags := flagDirty
	if low {
		flags |= flagLow
	}
	if i < 0 {
		s.items.insert(tag, item, flags)
		q.enqueue(item, low)
		return
	}
	// Being processed: Done queues it, as it must not be handed out
	// twice at once.
	s.items.slots[i].flags |= flags
}

// enqueue appends item's entry. The caller holds item's shard lock.
func (q *Queue[T]) enqueue(item T, low bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown.Load() {
		return // shutDown cleans the shard's state after us
	}
	q.lastSeq++
	e := entry[T]{item: item, seq: q.lastSeq}
	if low {
		q.lowSeq[item] = e.seq
		q.low.push(e)
		q.liveLow++
	} else {
		q.normal.push(e)
		q.liveNormal++
	}
	q.ready.Signal()
}

// promote moves a queued low item to the back of the normal fifo; its low
// entry goes stale. The caller holds item's shard lock.
func (q *Queue[T]) promote(item T) {
	q.mu.Lock()
	if _, queued := q.lowSeq[item]; !queued {
		// A Get has popped it and is about to mark it processing.
		q.mu.Unlock()
		return
	}
	delete(q.lowSeq, item)
	q.liveLow--
	q.mu.Unlock()
	q.enqueue(item, false)
}

// Get blocks until an item is ready and hands it out; the caller must call
// Done with it when finished. Several goroutines may Get at once; an item is
// never handed to two of them at the same time. Get returns shutdown=true,
// at once, once the queue is shutting down, even if items were queued:
// a queue that stops does not work through its backlog.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	q.mu.Lock()
	for q.liveNormal+q.liveLow == 0 && !q.shuttingDown.Load() {
		q.ready.Wait()
	}
	if q.shuttingDown.Load() {
		q.mu.Unlock()
		return item, true
	}
	item = q.popLocked()
	q.processing.Add(1)
	var now time.Time
	if q.metrics != nil {
		now = time.Now()
		q.started[item] = now
	}
	q.mu.Unlock()

	// Between the pop and here the item is still dirty in its shard, so a
	// concurrent Add of it is (rightly) a no-op: this hand-out is after it.
	s, tag := q.shards.of(item)
	s.mu.Lock()
	if q.metrics != nil {
		q.addedMu.Lock()
		q.metrics.Started(now.Sub(q.addedAt[item]))
		delete(q.addedAt, item)
		q.addedMu.Unlock()
	}
	// The item was dirty when popped; a shutDown since then may have
	// dropped it from the table. Either way it is processing now, so that
	// its Done counts for ShutDownWithDrain.
	if i := s.items.find(tag, item); i >= 0 {
		s.items.slots[i].flags = flagProcessing
	} else {
		s.items.insert(tag, item, flagProcessing)
	}
	s.mu.Unlock()
	return item, false
}

// popLocked takes the next valid entry, choosing the priority by the
// low-priority bound. There must be at least one valid entry.
func (q *Queue[T]) popLocked() T {
	if q.liveLow > 0 && (q.liveNormal == 0 || q.normalStreak >= q.lowEvery) {
		q.normalStreak = 0
		q.liveLow--
		for {
			e := q.low.pop()
			if seq, ok := q.lowSeq[e.item]; ok && seq == e.seq {
				delete(q.lowSeq, e.item)
				return e.item
			}
		}
	}
	if q.liveLow > 0 {
		q.normalStreak++
	} else {
		q.normalStreak = 0
	}
	q.liveNormal--
	return q.normal.pop().item
}

// Done marks item as finished. If it was added again while being
// processed, it is queued now, so it is processed again exactly once.
// Done of an item that is not being processed does nothing.
func (q *Queue[T]) Done(item T) {
	s, tag := q.shards.of(item)
	s.mu.Lock()
	i := s.items.find(tag, item)
	if i < 0 || s.items.slots[i].flags&flagProcessing == 0 {
		s.mu.Unlock()
		return
	}
	st := &s.items.slots[i]
	if q.metrics != nil {
		q.mu.Lock()
		q.metrics.Finished(time.Since(q.started[item]))
		delete(q.started, item)
		q.mu.Unlock()
	}
	st.flags &^= flagProcessing
	if st.flags&flagDirty != 0 && !q.shuttingDown.Load() {
		q.enqueue(item, st.flags&flagLow != 0)
	} else {
		s.items.remove(i)
	}
	s.mu.Unlock()
	if q.processing.Add(-1) == 0 && q.shuttingDown.Load() {
		q.mu.Lock()
		q.idle.Broadcast()
		q.mu.Unlock()
	}
}

// Len returns the number of items waiting to be handed out. Items waiting
// in AddAfter, and items re-added while being processed, are not counted.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.liveNormal + q.liveLow
}

// ShutDown stops the queue: adds are ignored from now on, queued and
// delayed items are dropped, every blocked and future Get returns
// shutdown=true, and Run returns. Items being processed may still be Done.
func (q *Queue[T]) ShutDown() { q.shutDown() }

// ShutDownWithDrain is ShutDown, then waits until every item being
// processed is Done. It blocks forever if a worker never calls Done.
func (q *Queue[T]) ShutDownWithDrain() {
	q.shutDown()
	q.mu.Lock()
	for q.processing.Load() > 0 {
		q.idle.Wait()
	}
	q.mu.Unlock()
}

// shutDown sets the flag under mu, then cleans each shard. An add racing
// with it either ran its shard section before the cleaning of that shard
// (and is cleaned, its enqueue refused under mu) or after (and sees the
// flag, which was set before any cleaning began).
func (q *Queue[T]) shutDown() {
	q.mu.Lock()
	if q.shuttingDown.Load() {
		q.mu.Unlock()
		return
	}
	q.shuttingDown.Store(true)
	q.normal.reset()
	q.low.reset()
	clear(q.lowSeq)
	q.liveNormal, q.liveLow = 0, 0
	q.delayed.reset()
	q.ready.Broadcast()
	select {
	case q.wakeDelay <- struct{}{}:
	default:
	}
	q.mu.Unlock()

	if q.metrics != nil {
		q.addedMu.Lock()
		clear(q.addedAt)
		q.addedMu.Unlock()
	}
	for i := range q.shards.s {
		s := &q.shards.s[i]
		s.mu.Lock()
		s.items.keepProcessing()
		s.mu.Unlock()
	}
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (q *Queue[T]) ShuttingDown() bool { return q.shuttingDown.Load() }
