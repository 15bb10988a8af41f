package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrRunning is returned by a second call of Group.Run.
var ErrRunning = errors.New("run: group already run")

type task struct {
	name string
	f    func(context.Context) error
}

type state int

const (
	idle     state = iota // before Run: Go queues
	running               // Go starts
	stopping              // Go refuses; Run waits
)

// Group runs named goroutines; see the package doc for the contract. The
// zero value is ready to use.
type Group struct {
	// mu guards everything below. wg.Add happens only with mu held and
	// state == running, so never after Run's final Wait has begun.
	mu      sync.Mutex
	state   state
	ctx     context.Context // the goroutines' context; set from Run on
	cancel  context.CancelFunc
	pending []task // queued before Run
	err     error  // first error, wrapped with its goroutine's name
	failed  chan struct{}
	wg      sync.WaitGroup
}

// Go runs f(ctx) in a new goroutine named name: now if the group runs,
// when Run starts if it has not yet, and never once Run has begun
// stopping. It reports whether f was started or queued.
func (g *Group) Go(name string, f func(ctx context.Context) error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.state {
	case idle:
		g.pending = append(g.pending, task{name, f})
		return true
	case running:
		g.startLocked(task{name, f})
		return true
	default:
		return false
	}
}

func (g *Group) startLocked(t task) {
	ctx := g.ctx
	g.wg.Go(func() {
		err := t.f(ctx)
		if err == nil || errors.Is(err, context.Canceled) {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		// Once ctx is done, errors are the cancellation's echo.
		if g.state == running && g.ctx.Err() == nil && g.err == nil {
			g.err = fmt.Errorf("%s: %w", t.name, err)
			close(g.failed)
		}
	})
}

// Run starts the queued goroutines and those added later, blocks until
// ctx ends or one of them fails, then cancels them all and returns after
// every one has ended: with the first failure, or nil.
func (g *Group) Run(ctx context.Context) error {
	g.mu.Lock()
	if g.state != idle {
		g.mu.Unlock()
		return ErrRunning
	}
	g.state = running
	g.ctx, g.cancel = context.WithCancel(ctx)
	g.failed = make(chan struct{})
	for _, t := range g.pending {
		g.startLocked(t)
	}
	g.pending = nil
	failed := g.failed
	g.mu.Unlock()

	select {
	case <-ctx.Done():
	case <-failed:
	}

	g.mu.Lock()
	g.state = stopping
	err := g.err
	g.mu.Unlock()
	g.cancel()
	// No goroutine starts after state left running, so Wait sees every Add.
	g.wg.Wait()
	return err
}
