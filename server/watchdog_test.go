package server

import (
	"testing"
	"time"
)

// cuts records the watchdog's calls of SetWriteDeadline.
type cuts chan time.Time

func (c cuts) set(t time.Time) error { c <- t; return nil }

// next waits for a cut; a watchdog that never cuts fails the test.
func (c cuts) next(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-c:
		return at
	case <-time.After(10 * time.Second):
		t.Fatal("the write was not cut")
		return time.Time{}
	}
}

// TestWriteWatchdogCutsAStuckWrite: a write that does not end is cut once
// the timeout has passed since it began, and only once.
func TestWriteWatchdogCutsAStuckWrite(t *testing.T) {
	const timeout = 50 * time.Millisecond
	c := make(cuts, 2)
	d := newWriteWatchdog(c.set, timeout, time.Now().Add(time.Hour))
	defer d.stop()
	began := time.Now()
	d.begin()
	at := c.next(t)
	if waited := at.Sub(began); waited < timeout {
		t.Fatalf("cut %v after the write began, before the %v timeout", waited, timeout)
	}
	d.mu.Lock()
	stopped := d.stopped
	d.mu.Unlock()
	if !stopped {
		t.Fatal("the watchdog goes on checking after it cut the write")
	}
}

// TestWriteWatchdogSparesWritesThatEnd: writes that each end in time, over
// many timeouts, and a quiet stream in between, are never cut.
func TestWriteWatchdogSparesWritesThatEnd(t *testing.T) {
	// Long enough that a goroutine descheduled between begin and done on
	// a loaded machine is not taken for a stuck write.
	const timeout = 200 * time.Millisecond
	c := make(cuts, 1)
	d := newWriteWatchdog(c.set, timeout, time.Now().Add(time.Hour))
	for end := time.Now().Add(3 * timeout); time.Now().Before(end); {
		d.begin()
		d.done()
		select {
		case at := <-c:
			t.Fatalf("a write that ended was cut at %v", at)
		case <-time.After(timeout / 4):
		}
	}
	idle := time.NewTimer(3 * timeout) // a quiet stream outlives its write timeout
	select {
	case at := <-c:
		t.Fatalf("an idle stream was cut at %v", at)
	case <-idle.C:
	}
	d.stop()
	select {
	case at := <-c:
		t.Fatalf("cut at %v", at)
	default:
	}
}

// TestWriteWatchdogCutsAtTheWatchEnd: a write in progress when the watch's
// timeout comes is cut then, before its write timeout.
func TestWriteWatchdogCutsAtTheWatchEnd(t *testing.T) {
	end := time.Now().Add(30 * time.Millisecond)
	c := make(cuts, 1)
	d := newWriteWatchdog(c.set, time.Hour, end)
	defer d.stop()
	d.begin()
	if at := c.next(t); at.Before(end) || at.Sub(end) > 10*time.Second {
		t.Fatalf("cut at %v, want at the watch's end %v", at, end)
	}
}

// TestWriteWatchdogStop: after stop returns, nothing is cut.
func TestWriteWatchdogStop(t *testing.T) {
	const timeout = 200 * time.Millisecond
	c := make(cuts, 1)
	d := newWriteWatchdog(c.set, timeout, time.Now().Add(time.Hour))
	d.begin()
	d.stop()
	wait := time.NewTimer(2 * timeout)
	select {
	case at := <-c:
		t.Fatalf("cut at %v after stop", at)
	case <-wait.C:
	}
}
