package workqueue

import (
	"time"

	"golang.org/x/time/rate"
)

// TokenBucket is an overall RateLimiter: all items share one token bucket,
// so retries as a whole proceed at no more than qps after a burst. It keeps
// no per-item history: Forget does nothing and NumRequeues is zero.
type TokenBucket[T comparable] struct {
	limiter *rate.Limiter
}

// NewTokenBucket returns a bucket refilled at qps tokens a second holding at
// most burst tokens.
func NewTokenBucket[T comparable](qps float64, burst int) *TokenBucket[T] {
	return &TokenBucket[T]{limiter: rate.NewLimiter(rate.Limit(qps), burst)}
}

// When implements RateLimiter: it reserves a token and returns how long
// until that token is available.
func (b *TokenBucket[T]) When(T) time.Duration { return b.limiter.Reserve().Delay() }

// Forget implements RateLimiter.
func (b *TokenBucket[T]) Forget(T) {}

// NumRequeues implements RateLimiter.
func (b *TokenBucket[T]) NumRequeues(T) int { return 0 }
