package server

import (
	"sync"
	"sync/atomic"
	"time"
)

// writeWatchdog disconnects a watcher that stopped reading: a write or
// flush still running writeTimeout after it began (or at the watch's end,
// if that comes first) gets a write deadline in the past, which fails it
// (over HTTP/1.1 the connection's write returns; over HTTP/2 the stream is
// reset).
//
// Writes only note when they begin and end. Setting a write deadline per
// event instead, and clearing it once the stream is idle (over HTTP/2 an
// armed deadline is a timer that resets even a quiet stream), cost every
// event two SetWriteDeadline calls, each over HTTP/2 a message to the
// connection's goroutine and a new timer.
type writeWatchdog struct {
	set     func(time.Time) error // the response's SetWriteDeadline
	timeout time.Duration
	end     time.Time

	// since is when the write in progress began, as nanoseconds after
	// base (monotonic, so a step of the wall clock moves no cut); 0
	// between writes.
	base  time.Time
	since atomic.Int64

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func newWriteWatchdog(set func(time.Time) error, timeout time.Duration, end time.Time) *writeWatchdog {
	d := &writeWatchdog{set: set, timeout: timeout, end: end, base: time.Now()}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer = time.AfterFunc(d.nextCheck(time.Now()), d.check)
	return d
}

// begin and done bracket one write or flush.
func (d *writeWatchdog) begin() { d.since.Store(int64(time.Since(d.base)) + 1) }
func (d *writeWatchdog) done()  { d.since.Store(0) }

// deadline is when the write in progress must have ended, or zero.
func (d *writeWatchdog) deadline() time.Time {
	s := d.since.Load()
	if s == 0 {
		return time.Time{}
	}
	cut := d.base.Add(time.Duration(s-1) + d.timeout)
	if cut.After(d.end) {
		cut = d.end
	}
	return cut
}

// nextCheck is how long until the next check: the deadline of the write
// in progress, or else a whole timeout (a write that begins meanwhile has
// at least that long), cut at the watch's end while that is ahead.
func (d *writeWatchdog) nextCheck(now time.Time) time.Duration {
	if cut := d.deadline(); !cut.IsZero() {
		return max(cut.Sub(now), 0)
	}
	if untilEnd := d.end.Sub(now); untilEnd > 0 {
		return min(d.timeout, untilEnd)
	}
	return d.timeout
}

func (d *writeWatchdog) check() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	now := time.Now()
	if cut := d.deadline(); !cut.IsZero() && !now.Before(cut) {
		d.stopped = true
		_ = d.set(now)
		return
	}
	d.timer.Reset(d.nextCheck(now))
}

// stop ends the watchdog; once it returns, it calls set no more. The
// handler calls it before it returns.
func (d *writeWatchdog) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	d.timer.Stop()
}
