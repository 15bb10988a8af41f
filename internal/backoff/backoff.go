package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Sleep waits for d or until ctx ends, whichever is first. It returns nil
// if d passed and ctx's error if ctx ended first (or had already ended:
// with d <= 0 it returns ctx.Err() at once).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Exponential is a retry delay that starts at Initial and doubles up to
// Max. Each delay is multiplied by a random factor in [1, 1+Jitter) and
// capped at Max; Jitter 0 means none. After an attempt that ran for at
// least ResetAfter (if > 0) the delay starts over, as after Reset.
//
// Fields are set before the first Next and not changed after. Not safe for
// concurrent use: one retry loop owns it.
type Exponential struct {
	Initial    time.Duration
	Max        time.Duration
	Jitter     float64
	ResetAfter time.Duration

	cur time.Duration // the un-jittered next delay; 0 = Initial
}

// Next returns the delay before retrying an attempt that ran for ran
// (pass 0 when the attempt's length does not matter).
func (b *Exponential) Next(ran time.Duration) time.Duration {
	if b.cur == 0 || (b.ResetAfter > 0 && ran >= b.ResetAfter) {
		b.cur = b.Initial
	}
	d := b.cur
	b.cur = min(2*b.cur, max(b.Max, b.Initial))
	if b.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + rand.Float64()*b.Jitter))
	}
	return min(d, max(b.Max, b.Initial))
}

// Reset makes the next delay Initial again.
func (b *Exponential) Reset() { b.cur = 0 }
