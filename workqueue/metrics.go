package workqueue

import (
	"time"
)

// MetricsProvider makes the metrics of one named queue. A queue calls
// NewQueueMetrics once, in New.
type MetricsProvider interface {
	// NewQueueMetrics returns the event sink of the queue called name.
	// snapshot reads the queue's current depth and in-flight work; the
	// provider may call it at any time, from any goroutine (for example
	// when metrics are scraped), so gauges never drift from the queue.
	NewQueueMetrics(name string, snapshot func() Snapshot) QueueMetrics
}

// QueueMetrics receives a queue's events. The queue may call its methods
// with one of its locks held and from many goroutines at once, so they must
// be fast, safe for concurrent use, and must not call back into the queue.
type QueueMetrics interface {
	// Added: an item became dirty (a deduplicated add is not counted).
	Added()
	// Started: Get handed out an item that had waited for waited.
	Started(waited time.Duration)
	// Finished: Done ended an item that was processed for worked.
	Finished(worked time.Duration)
	// Retried: AddAfter was called (AddRateLimited calls it), before
	// shutdown, as client-go counts workqueue_retries_total.
	Retried()
}

// Snapshot is a queue's state at one instant.
type Snapshot struct {
	// Depth is the items waiting to be handed out: Len, and those added
	// again while processing, which Done queues (client-go's
	// workqueue_depth counts both).
	Depth int
	// Unfinished is the summed age of the items being processed;
	// Longest is the age of the oldest of them.
	Unfinished, Longest time.Duration
}

// snapshot is the queue's MetricsProvider probe. It takes the lock and
// walks the processing items, which are few (one per worker).
func (q *Queue[T]) snapshot() Snapshot {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Snapshot{Depth: q.liveNormal + q.liveLow}
	now := time.Now()
	for item, t := range q.started {
		if q.items[item].flags&flagDirty != 0 {
			s.Depth++ // added again while processing: queued at Done
		}
		age := now.Sub(t)
		s.Unfinished += age
		s.Longest = max(s.Longest, age)
	}
	return s
}
