package informer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/informer"
)

// TestHandlerLifecycleAroundRun: a handler removed before Run never hears
// anything, one added before Run is started by it, and one added after
// Run returned is refused with ErrStopped.
func TestHandlerLifecycleAroundRun(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 3)
	inf, err := informer.New[U](srv, informer.Options[U]{Reflector: fastOpts(false, 0)})
	if err != nil {
		t.Fatal(err)
	}
	var removedCalls atomic.Int32
	removed, err := inf.AddEventHandler(informer.HandlerFuncs[U]{AddFunc: func(U, bool) { removedCalls.Add(1) }}, informer.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	removed.Remove()
	var adds atomic.Int32
	kept, err := inf.AddEventHandler(informer.HandlerFuncs[U]{AddFunc: func(U, bool) { adds.Add(1) }}, informer.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if !informer.WaitForCacheSync(t.Context(), kept.HasSynced) {
		t.Fatal("never synced")
	}
	if err := inf.Run(ctx); !errors.Is(err, informer.ErrStarted) {
		t.Errorf("second Run = %v, want ErrStarted", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := adds.Load(); n != 3 {
		t.Errorf("kept handler got %d adds, want 3", n)
	}
	if n := removedCalls.Load(); n != 0 {
		t.Errorf("handler removed before Run got %d adds", n)
	}
	if _, err := inf.AddEventHandler(informer.HandlerFuncs[U]{}, informer.HandlerOptions{}); !errors.Is(err, informer.ErrStopped) {
		t.Errorf("AddEventHandler after Run = %v, want ErrStopped", err)
	}
}
