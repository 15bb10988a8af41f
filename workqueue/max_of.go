package workqueue

import "time"

type maxOf[T comparable] []RateLimiter[T]

// MaxOf combines limiters: an item waits for the longest of their delays,
// and its requeue count is the largest of theirs. Every limiter counts every
// retry.
func MaxOf[T comparable](limiters ...RateLimiter[T]) RateLimiter[T] {
	return maxOf[T](limiters)
}

func (m maxOf[T]) When(item T) time.Duration {
	var longest time.Duration
	for _, l := range m {
		longest = max(longest, l.When(item))
	}
	return longest
}

func (m maxOf[T]) Forget(item T) {
	for _, l := range m {
		l.Forget(item)
	}
}

func (m maxOf[T]) NumRequeues(item T) int {
	n := 0
	for _, l := range m {
		n = max(n, l.NumRequeues(item))
	}
	return n
}

var (
	_ RateLimiter[string] = maxOf[string](nil)
	_ RateLimiter[string] = (*ExponentialBackoff[string])(nil)
	_ RateLimiter[string] = (*TokenBucket[string])(nil)
)
