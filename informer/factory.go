package informer

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/listwatch/listwatch/internal/run"
	"github.com/listwatch/listwatch/object"
)

// Key identifies a shared informer in a Factory: the resource and the
// slice of it that is watched.
type Key struct {
	Resource      string // e.g. "pods", "deployments.apps"
	Namespace     string // "" for all namespaces
	LabelSelector string
	FieldSelector string
}

func (k Key) String() string {
	return fmt.Sprintf("%s ns=%q labels=%q fields=%q", k.Resource, k.Namespace, k.LabelSelector, k.FieldSelector)
}

// runnable is what the factory needs from an *Informer[T] of any T.
type runnable interface {
	Run(ctx context.Context) error
	HasSynced() bool
}

type factoryKey struct {
	typ reflect.Type
	key Key
}

// Factory shares informers: For returns the same *Informer[T] for the same
// type and Key. The zero value is not usable; use NewFactory.
type Factory struct {
	defaults ReflectorOptions

	// mu guards informers and order. group runs the informers; For adds
	// to it with mu held, so an informer is in order exactly when it was
	// handed to the group.
	mu        sync.Mutex
	informers map[factoryKey]runnable
	order     []runnable
	group     run.Group
	ran       atomic.Bool
}

// NewFactory returns an empty factory whose informers use defaults for
// their reflectors (Name is set from the Key). It starts nothing.
func NewFactory(defaults ReflectorOptions) *Factory {
	return &Factory{defaults: defaults, informers: map[factoryKey]runnable{}}
}

// For returns the factory's informer for T and key, creating it with
// newLW and opts on first use (later calls' newLW and opts are ignored).
// The reflector options are the factory's defaults; opts.Reflector is
// ignored.
// An informer created while the factory runs is started at once; one
// created after Run returned is not started (run it yourself if need be).
//
// For is a function, not a method, because Go methods cannot have type
// parameters.
func For[T object.Object](f *Factory, key Key, newLW func() ListerWatcher[T], opts Options[T]) (*Informer[T], error) {
	fk := factoryKey{typ: reflect.TypeFor[T](), key: key}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.informers[fk]; ok {
		return r.(*Informer[T]), nil
	}
	opts.Reflector = f.defaults
	opts.Reflector.Name = key.String()
	inf, err := New(newLW(), opts)
	if err != nil {
		return nil, err
	}
	f.informers[fk] = inf
	f.order = append(f.order, inf)
	// Queued before Run, started during it, refused after it.
	f.group.Go(key.String(), func(ctx context.Context) error {
		_ = inf.Run(ctx) // only ErrStarted: the caller ran it already
		return nil
	})
	return inf, nil
}

// Run runs every informer, including those created later by For, until
// ctx ends, and returns after all of them have stopped.
func (f *Factory) Run(ctx context.Context) error {
	if !f.ran.CompareAndSwap(false, true) {
		return ErrStarted
	}
	return f.group.Run(ctx)
}

// WaitForCacheSync waits until every informer created so far has synced,
// and reports whether they did before ctx ended.
func (f *Factory) WaitForCacheSync(ctx context.Context) bool {
	f.mu.Lock()
	fns := make([]func() bool, len(f.order))
	for i, r := range f.order {
		fns[i] = r.HasSynced
	}
	f.mu.Unlock()
	return WaitForCacheSync(ctx, fns...)
}

// WaitForCacheSync polls synced (for example Informer.HasSynced or
// Registration.HasSynced) every 50ms until all are true or ctx ends.
func WaitForCacheSync(ctx context.Context, synced ...func() bool) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		done := true
		for _, s := range synced {
			if !s() {
				done = false
				break
			}
		}
		if done {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
