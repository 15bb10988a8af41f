package run_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/internal/run"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunWaitsForEveryGoroutine(t *testing.T) {
	var g run.Group
	var ended atomic.Int32
	started := make(chan struct{})
	g.Go("queued", func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		ended.Add(1)
		return nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	<-started
	later := make(chan struct{})
	if !g.Go("later", func(ctx context.Context) error {
		close(later)
		<-ctx.Done()
		ended.Add(1)
		return ctx.Err()
	}) {
		t.Fatal("Go refused while running")
	}
	<-later
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if n := ended.Load(); n != 2 {
		t.Fatalf("%d goroutines ended before Run returned, want 2", n)
	}
	if g.Go("after", func(context.Context) error { return nil }) {
		t.Fatal("Go accepted after Run returned")
	}
	if err := g.Run(t.Context()); !errors.Is(err, run.ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
}

func TestFirstErrorCancelsTheRest(t *testing.T) {
	var g run.Group
	boom := errors.New("boom")
	g.Go("waiter", func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("after stop: dropped")
	})
	g.Go("failer", func(context.Context) error { return boom })
	err := g.Run(t.Context())
	if !errors.Is(err, boom) || err.Error() != "failer: boom" {
		t.Fatalf("Run = %v, want failer: boom", err)
	}
}

func TestNilReturnStopsOnlyItself(t *testing.T) {
	var g run.Group
	ctx, cancel := context.WithCancel(t.Context())
	g.Go("short", func(context.Context) error {
		cancel() // the group goes on until ctx ends; this ends it
		return nil
	})
	g.Go("long", func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	if err := g.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestZeroGoroutinesBlocksUntilCtxEnds(t *testing.T) {
	var g run.Group
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
}
