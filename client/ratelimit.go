package client

import (
	"context"
	"fmt"

	"golang.org/x/time/rate"
)

// rateLimiter is the client-side token bucket every request waits on
// before it is sent, as client-go's flowcontrol limiter.
type rateLimiter struct {
	lim   *rate.Limiter // nil: unlimited
	clock clock
}

func newRateLimiter(qps float32, burst int, clk clock) *rateLimiter {
	if qps < 0 {
		return &rateLimiter{clock: clk}
	}
	if qps == 0 {
		qps = DefaultQPS
	}
	if burst == 0 {
		burst = DefaultBurst
	}
	return &rateLimiter{lim: rate.NewLimiter(rate.Limit(qps), burst), clock: clk}
}

// wait takes one token, waiting for it with ctx. If ctx ends first the
// token is given back and ctx's error returned. A wait that could not end
// before ctx's deadline fails at once instead of sleeping into it.
func (l *rateLimiter) wait(ctx context.Context) error {
	if l.lim == nil {
		return ctx.Err()
	}
	now := l.clock.Now()
	r := l.lim.ReserveN(now, 1)
	if !r.OK() {
		return fmt.Errorf("client: rate limiter burst is 0")
	}
	d := r.DelayFrom(now)
	if d == 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && dl.Sub(now) < d {
		r.CancelAt(now)
		return fmt.Errorf("client: rate limiter wait of %v would exceed the context deadline: %w", d, context.DeadlineExceeded)
	}
	if err := l.clock.Sleep(ctx, d); err != nil {
		r.CancelAt(l.clock.Now())
		return err
	}
	return nil
}
