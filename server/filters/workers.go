package filters

import (
	"time"
)

// workers runs functions on goroutines kept between calls.
//
// Timeout runs each handler on a goroutine of its own. A new goroutine
// starts with a small stack, and a write request's handler (decoding,
// defaulting, validation, managedFields) is deep enough that the runtime
// grows that stack three or four times, copying it each time: in a CPU
// profile of serve under 16 concurrent creates, copying stacks of fresh
// handler goroutines was 4–5% of the process's CPU. A kept goroutine has
// already grown its stack, so its next handler starts with it. (grpc-go
// keeps stream workers for the same reason.)
//
// A goroutine waits for more work for at most idle, then ends: an idle
// server keeps none, and a test's goroutine-leak check, which retries for
// about half a second, does not find them.
//
// Each handler chain has its own: a goroutine carries what it was started
// with (a testing/synctest bubble, profiler labels) to every function it
// runs, so goroutines are not shared beyond the chain that made them. A
// test that serves requests inside a synctest bubble must build the chain
// inside it too: a goroutine started in the bubble waiting on a chain's
// channel made outside it is not durably blocked, so the bubble's clock
// never reaches its idle timeout.
type workers struct {
	work chan func()
	idle time.Duration
}

func newWorkers(idle time.Duration) *workers {
	return &workers{work: make(chan func()), idle: idle}
}

// workerIdle is how long Timeout's goroutines wait for another request.
const workerIdle = 200 * time.Millisecond

// run calls f on a waiting goroutine, or on a new one if none is waiting.
// It never waits itself.
func (p *workers) run(f func()) {
	select {
	case p.work <- f:
	default:
		go p.loop(f)
	}
}

func (p *workers) loop(f func()) {
	f()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
}
