package client

import (
	"context"
	"time"

	"github.com/listwatch/listwatch/internal/backoff"
)

// clock is the time source of the rate limiter, the retry delays, the
// exec credential cache and the token file cache. Tests replace it so that
// waits are observed and released by hand instead of slept through.
type clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx ends, whichever is first, and returns
	// ctx's error in the latter case.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error { return backoff.Sleep(ctx, d) }
