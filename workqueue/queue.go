package workqueue

import (
	"sync"
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

// Item state flags.
const (
	flagDirty      uint8 = 1 << iota // waiting to be handed out (again)
	flagProcessing                   // handed out by Get, not yet Done
	flagLow                          // the pending hand-out is low priority
)

// itemState is what the queue knows of an item that is dirty, processing
// or both. seq identifies the item's entry in the low fifo while it waits
// there, so that entry can be told from a stale one.
type itemState struct {
	flags uint8
	seq   uint64
}

// Queue is a work queue of comparable items: deduplicating, fair, with
// delayed and rate-limited adds and two priorities. See the package doc for
// its guarantees. Create one with New; it is safe for concurrent use.
//
// One mutex guards everything; nothing else is locked while it is held
// except the metrics' own locks (QueueMetrics are called under it).
type Queue[T comparable] struct {
	mu sync.Mutex
	// ready is signalled when an item is queued, broadcast at shutdown.
	ready sync.Cond
	// idle is broadcast when the last processing item is Done in shutdown.
	idle sync.Cond
	// items holds every dirty or processing item; an item that is neither
	// is absent. An item that is dirty and not processing has exactly one
	// valid entry in normal or low (low if flagLow); an item that is
	// processing has none, and Done queues it if it is dirty.
	items map[T]itemState
	// normal and low hold the queued items in hand-out order. Every normal
	// entry is valid; a low entry is valid only if its item is still
	// dirty, low, not processing, and has the entry's seq (a normal Add
	// moves a low item to normal and leaves the low entry stale).
	normal, low fifo[T]
	lastSeq     uint64
	// liveNormal and liveLow count valid entries; their sum is Len.
	liveNormal, liveLow int
	// normalStreak counts normal hand-outs in a row while low items wait.
	normalStreak int
	lowEvery     int
	// processing counts items handed out and not yet Done.
	processing   int
	shuttingDown bool
	// delayed holds AddAfter items that are not ready yet.
	delayed delayHeap[T]
	// wakeDelay (capacity 1) tells Run that the earliest ready time moved
	// or the queue shut down.
	wakeDelay chan struct{}
	// started holds when each processing item was handed out, for the
	// unfinished-work gauges; addedAt when each dirty item was added, for
	// the queue-duration histogram. Both nil without metrics.
	started, addedAt map[T]time.Time

	limiter RateLimiter[T] // safe for concurrent use; called without mu
	metrics QueueMetrics   // nil when off; safe for concurrent use
}

// New returns an empty queue. It starts no goroutine: call Run to make
// AddAfter and AddRateLimited deliver their items (see Run).
func New[T comparable](cfg Config[T]) *Queue[T] {
	q := &Queue[T]{
		items:     make(map[T]itemState),
		wakeDelay: make(chan struct{}, 1),
		limiter:   cfg.RateLimiter,
		lowEvery:  cfg.LowPriorityEvery,
	}
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
func (q *Queue[T]) Add(item T) {
	q.mu.Lock()
	q.addLocked(item, false)
	q.mu.Unlock()
}

// AddLowPriority queues item behind every normal item, for work that is
// not caused by a change (periodic resyncs). A low-priority item is handed
// out only when no normal item is queued, or after LowPriorityEvery normal
// items in a row, so it waits at most about
// (its place among low items + 1) × (LowPriorityEvery + 1) hand-outs.
// An item already queued at normal priority stays there.
func (q *Queue[T]) AddLowPriority(item T) {
	q.mu.Lock()
	q.addLocked(item, true)
	q.mu.Unlock()
}

func (q *Queue[T]) addLocked(item T, low bool) {
	if q.shuttingDown {
		return
	}
	st, known := q.items[item]
	if st.flags&flagDirty != 0 {
		// Already waiting. Only a promotion from low to normal priority
		// has anything to do.
		if !low && st.flags&flagLow != 0 {
			st.flags &^= flagLow
			if st.flags&flagProcessing == 0 {
				q.liveLow-- // its low entry is stale now
				if q.liveLow == 0 {
					q.low.reset() // only stale entries left: drop them
				}
				q.enqueueLocked(item, &st)
			}
			q.items[item] = st
		}
		return
	}
	if q.metrics != nil {
		q.addedAt[item] = time.Now()
		q.metrics.Added()
	}
	st.flags |= flagDirty
	if low {
		st.flags |= flagLow
	}
	if !known {
		q.enqueueLocked(item, &st)
	} // else being processed: Done queues it, so it is never handed out twice at once
	q.items[item] = st
}

// enqueueLocked appends an entry for item, whose state st is dirty and not
// processing, to the fifo of its priority, and wakes one Get.
func (q *Queue[T]) enqueueLocked(item T, st *itemState) {
	q.lastSeq++
	st.seq = q.lastSeq
	e := entry[T]{item: item, seq: st.seq}
	if st.flags&flagLow != 0 {
		q.low.push(e)
		q.liveLow++
	} else {
		q.normal.push(e)
		q.liveNormal++
	}
	q.ready.Signal()
}

// Get blocks until an item is ready and hands it out; the caller must call
// Done with it when finished. Several goroutines may Get at once; an item is
// never handed to two of them at the same time. Get returns shutdown=true,
// at once, once the queue is shutting down, even if items were queued:
// a queue that stops does not work through its backlog.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.liveNormal+q.liveLow == 0 && !q.shuttingDown {
		q.ready.Wait()
	}
	if q.shuttingDown {
		return item, true
	}
	item = q.popLocked()
	q.items[item] = itemState{flags: flagProcessing}
	q.processing++
	if q.metrics != nil {
		now := time.Now()
		q.started[item] = now
		q.metrics.Started(now.Sub(q.addedAt[item]))
		delete(q.addedAt, item)
	}
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
			if st := q.items[e.item]; st.flags == flagDirty|flagLow && st.seq == e.seq {
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
	q.mu.Lock()
	defer q.mu.Unlock()
	st, ok := q.items[item]
	if !ok || st.flags&flagProcessing == 0 {
		return
	}
	if q.metrics != nil {
		q.metrics.Finished(time.Since(q.started[item]))
		delete(q.started, item)
	}
	q.processing--
	st.flags &^= flagProcessing
	if st.flags&flagDirty != 0 && !q.shuttingDown {
		q.enqueueLocked(item, &st)
		q.items[item] = st
	} else {
		delete(q.items, item)
	}
	if q.processing == 0 && q.shuttingDown {
		q.idle.Broadcast()
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
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	q.shutDownLocked()
	q.mu.Unlock()
}

// ShutDownWithDrain is ShutDown, then waits until every item being
// processed is Done. It blocks forever if a worker never calls Done.
func (q *Queue[T]) ShutDownWithDrain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutDownLocked()
	for q.processing > 0 {
		q.idle.Wait()
	}
}

func (q *Queue[T]) shutDownLocked() {
	if q.shuttingDown {
		return
	}
	q.shuttingDown = true
	q.normal.reset()
	q.low.reset()
	q.liveNormal, q.liveLow = 0, 0
	q.delayed.reset()
	for item, st := range q.items {
		if st.flags&flagProcessing == 0 {
			delete(q.items, item)
		} else {
			q.items[item] = itemState{flags: flagProcessing} // Done drops it
		}
	}
	if q.metrics != nil {
		clear(q.addedAt)
	}
	q.ready.Broadcast()
	select {
	case q.wakeDelay <- struct{}{}:
	default:
	}
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}
