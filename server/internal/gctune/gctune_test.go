package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPercent(t *testing.T) {
	c := Config{Base: 75, Cached: 10}
	for _, tc := range []struct {
		live, cached int64
		want         int
	}{
		{0, 0, 75},             // nothing known yet
		{100, 0, 75},           // no cache: GOGC as set
		{100, 100, 10},         // all cached values
		{283, 160, 38},         // 100k ConfigMaps: (123·75 + 160·10)/283
		{100, 200, 10},         // cached counted past live (history, rounding): capped
		{100, -5, 75},          // a negative count is none
		{1 << 40, 1 << 39, 42}, // large heaps do not overflow
	} {
		if got := c.Percent(tc.live, tc.cached); got != tc.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tc.live, tc.cached, got, tc.want)
		}
	}
	if got := (Config{Base: 75, Cached: 0}).Percent(100, 100); got != 1 {
		t.Errorf("all cached at Cached 0: %d, want the floor of 1", got)
	}
}

func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestStart: Start sets the base at once; after a collection the tuner
// sets the GOGC of the live heap's make-up, follows a change of it (or of
// GOGC by anyone else) at the next collection, and stop puts back the GOGC
// it found.
func TestStart(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	var cached atomic.Int64
	stop := Start(Config{Base: 80, Cached: 20, CachedBytes: cached.Load, Every: time.Millisecond})
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	if p := gogc(); p != 80 {
		t.Fatalf("GOGC %d after Start, want the base 80", p)
	}
	waitFor := func(want func(int64) bool, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !want(gogc()) {
			if time.Now().After(deadline) {
				t.Fatalf("GOGC %d: never %s", gogc(), what)
			}
			runtime.GC()
			runtime.Gosched()
		}
	}
	// Half of the live heap cached: GOGC halfway between 80 and 20.
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Uint64() == 0 {
		t.Fatal("no live heap after a collection")
	}
	cached.Store(int64(s[0].Value.Uint64()) / 2)
	waitFor(func(p int64) bool { return p > 20 && p < 80 }, "between Cached and Base")
	cached.Store(0)
	waitFor(func(p int64) bool { return p == 80 }, "the base again with nothing cached")
	debug.SetGCPercent(300)
	waitFor(func(p int64) bool { return p == 80 }, "the base again after another set GOGC")
	stop()
	stopped = true
	if p := gogc(); p != 100 {
		t.Fatalf("GOGC after stop: %d, want the 100 it found", p)
	}
}
