package informer

import (
	"math/rand/v2"
	"time"
)

// BackoffOptions shape the reflector's retry delays: Initial, doubling up
// to Max, each multiplied by a random factor in [1, 1+Jitter) and capped
// at Max. After an
// attempt that stayed healthy for ResetAfter the delay starts over.
type BackoffOptions struct {
	Initial    time.Duration // default 800ms, as client-go
	Max        time.Duration // default 30s, as client-go
	Jitter     float64       // default 1.0
	ResetAfter time.Duration // default 2m
}

func (o BackoffOptions) withDefaults() BackoffOptions {
	if o.Initial <= 0 {
		o.Initial = 800 * time.Millisecond
	}
	if o.Max <= 0 {
		o.Max = 30 * time.Second
	}
	if o.Max < o.Initial {
		o.Max = o.Initial
	}
	if o.Jitter <= 0 {
		o.Jitter = 1.0
	}
	if o.ResetAfter <= 0 {
		o.ResetAfter = 2 * time.Minute
	}
	return o
}

// backoff is not safe for concurrent use; the reflector's Run loop owns it.
type backoff struct {
	opts BackoffOptions
	cur  time.Duration // the un-jittered delay of the next failure; 0 = Initial
}

// next returns the delay before retrying an attempt that ran for ran.
func (b *backoff) next(ran time.Duration) time.Duration {
	if ran >= b.opts.ResetAfter || b.cur == 0 {
		b.cur = b.opts.Initial
	}
	d := b.cur
	b.cur = min(b.cur*2, b.opts.Max)
	return min(time.Duration(float64(d)*(1+rand.Float64()*b.opts.Jitter)), b.opts.Max)
}
