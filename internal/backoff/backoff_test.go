package backoff

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestExponentialDoublesCapsAndResets(t *testing.T) {
	b := Exponential{Initial: 50 * time.Millisecond, Max: 300 * time.Millisecond, ResetAfter: 10 * time.Second}
	want := []time.Duration{50, 100, 200, 300, 300}
	for i, w := range want {
		if d := b.Next(0); d != w*time.Millisecond {
			t.Fatalf("delay %d = %v, want %v", i, d, w*time.Millisecond)
		}
	}
	if d := b.Next(10 * time.Second); d != 50*time.Millisecond {
		t.Fatalf("after a long attempt = %v, want Initial", d)
	}
	b.Next(0)
	b.Reset()
	if d := b.Next(0); d != 50*time.Millisecond {
		t.Fatalf("after Reset = %v, want Initial", d)
	}
}

func TestExponentialJitterStaysInRange(t *testing.T) {
	b := Exponential{Initial: time.Second, Max: time.Hour, Jitter: 1}
	for i := range 11 { // 2^11 s would reach Max
		base := time.Second << i
		d := b.Next(0)
		if d < base || d >= 2*base {
			t.Fatalf("delay %d = %v, want in [%v, %v)", i, d, base, 2*base)
		}
	}
	for range 5 {
		if d := b.Next(0); d > time.Hour {
			t.Fatalf("delay %v above Max", d)
		}
	}
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Fatalf("Sleep = %v after %v", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("Sleep cut by ctx = %v after %v", err, time.Since(start))
		}
		if err := Sleep(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep(0) on an ended ctx = %v", err)
		}
	})
}
