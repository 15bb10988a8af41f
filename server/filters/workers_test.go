package filters

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// goid is the running goroutine's id, from its stack header.
func goid(t *testing.T) uint64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := bytes.Fields(b)
	id, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		t.Error(err)
	}
	return id
}

func TestWorkersReuseAndEnd(t *testing.T) {
	p := newWorkers(time.Second)
	ids := make(chan uint64, 2)
	p.run(func() { ids <- goid(t) })
	first := <-ids
	// A blocking send is taken only by a goroutine waiting in its loop:
	// the one that ran the first function.
	p.work <- func() { ids <- goid(t) }
	if second := <-ids; second != first {
		t.Errorf("second call ran on goroutine %d, want the first's (%d)", second, first)
	}

	// run never waits for a busy goroutine.
	release := make(chan struct{})
	p.run(func() { <-release })
	ran := make(chan struct{})
	p.run(func() { close(ran) })
	<-ran
	close(release)

	// Idle goroutines end (each a second after its last call).
	deadline := time.Now().Add(time.Minute)
	for workersRunning() {
		if time.Now().After(deadline) {
			t.Fatal("idle workers still running after a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// workersRunning reports whether any goroutine is in a workers loop.
func workersRunning() bool {
	b := make([]byte, 1<<20)
	b = b[:runtime.Stack(b, true)]
	return bytes.Contains(b, []byte("filters.(*workers).loop"))
}
