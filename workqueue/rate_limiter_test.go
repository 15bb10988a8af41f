package workqueue

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestExponentialBackoffMath(t *testing.T) {
	b := NewExponentialBackoff[string](5*time.Millisecond, 1000*time.Second)
	want := time.Duration(5 * time.Millisecond)
	for i := range 40 {
		got := b.When("a")
		if got != want {
			t.Fatalf("retry %d: When = %v, want %v", i, got, want)
		}
		want = min(2*want, 1000*time.Second)
	}
	if n := b.NumRequeues("a"); n != 40 {
		t.Fatalf("NumRequeues = %d, want 40", n)
	}
	if got := b.When("b"); got != 5*time.Millisecond {
		t.Fatalf("other item: When = %v, want 5ms (per-item history)", got)
	}
	b.Forget("a")
	if got := b.When("a"); got != 5*time.Millisecond {
		t.Fatalf("after Forget: When = %v, want 5ms", got)
	}
	// Huge exponents saturate at the cap instead of overflowing.
	for range 2000 {
		b.When("c")
	}
	if got := b.When("c"); got != 1000*time.Second {
		t.Fatalf("after 2000 retries: When = %v, want the cap", got)
	}
}

func TestTokenBucketLimitsOverallRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket[string](10, 2)
		if d := b.When("a"); d != 0 {
			t.Fatalf("first token: %v, want 0", d)
		}
		if d := b.When("b"); d != 0 {
			t.Fatalf("second token (burst 2): %v, want 0", d)
		}
		if d := b.When("c"); d != 100*time.Millisecond {
			t.Fatalf("third token: %v, want 100ms", d)
		}
		if d := b.When("d"); d != 200*time.Millisecond {
			t.Fatalf("fourth token: %v, want 200ms", d)
		}
		if n := b.NumRequeues("a"); n != 0 {
			t.Fatalf("NumRequeues = %d, want 0", n)
		}
	})
}

func TestMaxOfTakesLongestAndLargestCount(t *testing.T) {
	fast := NewExponentialBackoff[string](time.Millisecond, time.Hour)
	slow := NewExponentialBackoff[string](time.Second, 2*time.Second)
	m := MaxOf[string](fast, slow)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 2 * time.Second} {
		if got := m.When("x"); got != want {
			t.Fatalf("When #%d = %v, want %v", i, got, want)
		}
	}
	if n := m.NumRequeues("x"); n != 3 {
		t.Fatalf("NumRequeues = %d, want 3", n)
	}
	m.Forget("x")
	if fast.NumRequeues("x")+slow.NumRequeues("x") != 0 {
		t.Fatal("Forget did not reach every limiter")
	}
}
