package workqueue

import (
	"context"
	"time"
)

// AddAfter adds item once d has passed. Until then the item waits outside
// the queue (Len does not count it); adding it again with AddAfter keeps
// the earlier ready time, and a plain Add in the meantime queues it at once
// without cancelling the delayed add (which then dedups as usual). A d of
// zero or less is Add.
//
// Delayed items are delivered by Run: without a running Run they wait.
func (q *Queue[T]) AddAfter(item T, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown {
		return
	}
	if q.metrics != nil {
		q.metrics.Retried()
	}
	if d <= 0 {
		q.addLocked(item, false)
		return
	}
	if q.delayed.add(item, time.Now().Add(d)) {
		select {
		case q.wakeDelay <- struct{}{}:
		default: // Run already has a wake-up pending
		}
	}
}

// Run delivers delayed items (AddAfter, AddRateLimited) when they become
// ready, with one timer, until ctx ends or the queue shuts down; it returns
// nil then. Its end leaves the queue open: ShutDown ends the queue (see
// the package doc's Lifecycle). Call it once per queue, in its own
// goroutine, for as long as the queue is used:
//
//	go func() { errc <- q.Run(ctx) }()
//	defer func() { q.ShutDown(); <-errc }()
//
// The queue's other methods work without Run; only delayed adds wait for it.
func (q *Queue[T]) Run(ctx context.Context) error {
	// The timer is armed only while the heap is non-empty; one timer serves
	// every delayed item.
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, ok, stopped := q.deliverReady()
		if stopped {
			return nil
		}
		var timerC <-chan time.Time
		if ok {
			timer.Reset(time.Until(next))
			timerC = timer.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-q.wakeDelay:
		case <-timerC:
		}
	}
}

// deliverReady moves every ready delayed item into the queue and returns
// the next ready time, if any, and whether the queue has shut down.
func (q *Queue[T]) deliverReady() (next time.Time, ok, stopped bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shuttingDown {
		return next, false, true
	}
	now := time.Now()
	for {
		item, ok := q.delayed.popReady(now)
		if !ok {
			break
		}
		q.addLocked(item, false)
	}
	next, ok = q.delayed.peek()
	return next, ok, false
}
