package workqueue

import "time"

// RateLimiter decides how long an item waits before it is retried.
// Implementations must be safe for concurrent use.
type RateLimiter[T comparable] interface {
	// When returns how long item should wait now, and counts one retry.
	When(item T) time.Duration
	// Forget clears item's retry history, typically after it succeeded.
	Forget(item T)
	// NumRequeues returns how many retries of item were counted since the
	// last Forget.
	NumRequeues(item T) int
}

// DefaultControllerRateLimiter behaves as client-go's
// DefaultTypedControllerRateLimiter: the larger of a per-item exponential
// backoff (5ms doubling to 1000s) and an overall token bucket (10 retries a
// second, bursts of 100).
func DefaultControllerRateLimiter[T comparable]() RateLimiter[T] {
	return MaxOf(
		NewExponentialBackoff[T](5*time.Millisecond, 1000*time.Second),
		NewTokenBucket[T](10, 100),
	)
}

// AddRateLimited adds item after the delay its rate limiter gives (see
// AddAfter: Run must be running).
func (q *Queue[T]) AddRateLimited(item T) {
	if q.ShuttingDown() {
		return
	}
	q.AddAfter(item, q.limiter.When(item))
}

// Forget tells the rate limiter that item is done being retried; its next
// AddRateLimited starts from the base delay again.
func (q *Queue[T]) Forget(item T) { q.limiter.Forget(item) }

// NumRequeues returns how many times item was rate-limited since Forget.
func (q *Queue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }
