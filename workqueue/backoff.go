package workqueue

import (
	"math"
	"sync"
	"time"
)

// ExponentialBackoff is a per-item RateLimiter: an item's n-th retry since
// Forget waits base·2ⁿ⁻¹, capped at max.
type ExponentialBackoff[T comparable] struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[T]int // guarded by mu; absent means zero
}

// NewExponentialBackoff returns a backoff from base doubling up to max.
// client-go's default controller limiter uses 5ms and 1000s.
func NewExponentialBackoff[T comparable](base, max time.Duration) *ExponentialBackoff[T] {
	return &ExponentialBackoff[T]{base: base, max: max, failures: make(map[T]int)}
}

// When implements RateLimiter.
func (b *ExponentialBackoff[T]) When(item T) time.Duration {
	b.mu.Lock()
	exp := b.failures[item]
	b.failures[item] = exp + 1
	b.mu.Unlock()

	// Compute in float64 so a large exponent saturates instead of
	// overflowing int64.
	d := float64(b.base) * math.Pow(2, float64(exp))
	if d >= float64(b.max) {
		return b.max
	}
	return time.Duration(d)
}

// Forget implements RateLimiter.
func (b *ExponentialBackoff[T]) Forget(item T) {
	b.mu.Lock()
	delete(b.failures, item)
	b.mu.Unlock()
}

// NumRequeues implements RateLimiter.
func (b *ExponentialBackoff[T]) NumRequeues(item T) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[item]
}
