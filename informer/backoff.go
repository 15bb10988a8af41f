package informer

import (
	"time"

	"github.com/listwatch/listwatch/internal/backoff"
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

// exponential is the shared retry delay these options shape; o has its
// defaults applied.
func (o BackoffOptions) exponential() backoff.Exponential {
	return backoff.Exponential{Initial: o.Initial, Max: o.Max, Jitter: o.Jitter, ResetAfter: o.ResetAfter}
}
