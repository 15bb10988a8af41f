package informer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/listwatch/listwatch/internal/protomemo"
	"github.com/listwatch/listwatch/internal/run"
	"github.com/listwatch/listwatch/object"
)

// Options configure an Informer. The zero value is usable.
type Options[T object.Object] struct {
	// Indexers are added to the store's built-in indexes.
	Indexers Indexers[T]
	// Transform, if set, rewrites every object before it is stored and
	// handed to handlers (see DropManagedFields). It may modify its
	// argument in place: the object is not shared yet. (Without a
	// Transform, lists decode repeated parts once and share them from
	// the start; see the package doc, Memory.)
	Transform func(T) (T, error)
	// DisableDedup turns off the sharing of equal parts between stored
	// objects (strings; for typed objects every equal pointed-to struct,
	// slice and map; for Unstructured every equal subtree), which the
	// informer does by default after Transform: values are unchanged,
	// memory is not (see the package doc, Memory). With it on, stored
	// objects share memory, one more reason never to modify them
	// (DeepCopy first).
	DisableDedup bool
	// Reflector tunes listing and watching; its ResyncPeriod and
	// ShouldResync are set by the informer.
	Reflector ReflectorOptions
}

// Informer is a shared informer: one reflector, one delta queue, one
// indexed store, and any number of handlers.
type Informer[T object.Object] struct {
	store     *Store[T]
	queue     *DeltaQueue[T]
	reflector *Reflector[T]
	logger    *slog.Logger

	// mu guards listeners, the listeners' resync state and the run state.
	// The pop loop holds it for reading while it updates the store and
	// fans out, so AddEventHandler (which holds it for writing) sees the
	// store and the notification stream at one consistent point.
	// Lock order: DeltaQueue.mu, then mu, then Store.mu.
	mu        sync.RWMutex
	listeners map[*listener[T]]struct{}
	started   bool
	// group runs the reflector, the pop loop and one goroutine per
	// listener. AddEventHandler adds to it with mu held, so a listener is
	// in listeners only if the group took (or will start) its goroutine.
	group run.Group
}

// New returns an informer over lw. It starts nothing; call Run.
func New[T object.Object](lw ListerWatcher[T], opts Options[T]) (*Informer[T], error) {
	store, err := NewStore(opts.Indexers)
	if err != nil {
		return nil, err
	}
	i := &Informer[T]{store: store, listeners: map[*listener[T]]struct{}{}}
	transform := opts.Transform
	var memo *protomemo.Memo
	if !opts.DisableDedup {
		d := newDeduper(DefaultDedupEntries)
		d.objects = store.Len
		if opts.Transform == nil && listsUntouched(lw) {
			// Parts decoded once are shared from the start, before any
			// transform, or a ListerWatcher of the user's own, could
			// change one object's copy.
			memo = protomemo.New()
			d.memo = memo
		}
		transform = withDedup(transform, d)
	}
	i.queue = NewDeltaQueue(DeltaQueueOptions[T]{KnownObjects: store, Transform: transform})
	ro := opts.Reflector
	ro.ResyncPeriod = i.resyncPeriod
	ro.ShouldResync = i.shouldResync
	i.reflector = NewReflector(lw, Sink[T](i.queue), ro)
	i.reflector.memo = memo
	i.logger = i.reflector.logger
	i.reflector.opts.Metrics.NewInformerMetrics(ro.Name, i.metricsSnapshot)
	return i, nil
}

// Lister reads the informer's store. The objects are shared: do not mutate.
func (i *Informer[T]) Lister() Lister[T] { return i.store }

// AddIndexers adds indexes, before or after Run (see Store.AddIndexers).
func (i *Informer[T]) AddIndexers(ix Indexers[T]) error {
	return i.store.AddIndexers(ix)
}

// HasSynced reports whether the first full list has been stored. It says
// nothing about handlers, which may still be catching up: a controller
// fed by a handler waits on that handler's Registration.HasSynced, which
// implies this one. Use this one for code that only reads the Lister.
func (i *Informer[T]) HasSynced() bool { return i.queue.HasSynced() }

// LastSyncError is why the informer is currently failing to list or
// watch, or nil.
func (i *Informer[T]) LastSyncError() error { return i.reflector.LastSyncError() }

// LastSyncResourceVersion is the newest resourceVersion observed.
func (i *Informer[T]) LastSyncResourceVersion() string {
	return i.reflector.LastSyncResourceVersion()
}

// Run lists, watches and delivers until ctx ends, then returns after the
// reflector, the pop loop and every handler goroutine have exited.
// It returns ErrStarted if called twice.
func (i *Informer[T]) Run(ctx context.Context) error {
	i.mu.Lock()
	if i.started {
		i.mu.Unlock()
		return ErrStarted
	}
	i.started = true
	i.group.Go("reflector", func(ctx context.Context) error {
		_ = i.reflector.Run(ctx)
		return nil
	})
	i.group.Go("pop", i.popLoop)
	i.mu.Unlock()
	return i.group.Run(ctx)
}

// popLoop hands the queue's deltas to process until ctx ends.
func (i *Informer[T]) popLoop(ctx context.Context) error {
	for ctx.Err() == nil {
		err := i.queue.Pop(ctx, i.process)
		if err != nil && ctx.Err() == nil {
			i.logger.Error("processing deltas", "err", err)
		}
	}
	return nil
}

// goListenerLocked gives l's delivery goroutine to the group; it ends with
// the group or when Remove cancels l.stop. Caller holds mu.
func (i *Informer[T]) goListenerLocked(l *listener[T]) bool {
	stop := l.stop
	return i.group.Go("listener", func(ctx context.Context) error {
		if stop.Err() != nil {
			return nil // removed before Run started it
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		l.run(ctx)
		return nil
	})
}

// process applies one key's deltas to the store and fans them out. It runs
// under the queue's lock (see PopProcessFunc).
func (i *Informer[T]) process(key string, deltas Deltas[T], initial bool) error {
	i.mu.RLock()
	defer i.mu.RUnlock()
	for _, d := range deltas {
		old, exists := i.store.GetByKey(key)
		switch d.Type {
		case Sync, Replaced, Added, Updated:
			i.store.Update(d.Object)
			if !exists {
				i.distribute(notification[T]{kind: notifyAdd, obj: d.Object, flag: initial}, false)
				continue
			}
			isSync := d.Type == Sync ||
				(d.Type == Replaced && old.GetResourceVersion() == d.Object.GetResourceVersion())
			i.distribute(notification[T]{kind: notifyUpdate, old: old, obj: d.Object}, isSync)
		case Deleted:
			if !exists {
				continue // handlers never saw it, or saw its delete already
			}
			i.store.DeleteKey(key)
			i.distribute(notification[T]{kind: notifyDelete, obj: d.Object, flag: d.FinalStateUnknown}, false)
		}
	}
	return nil
}

// distribute queues n for every listener; a resync goes only to listeners
// whose resync is due. Caller holds mu (read).
func (i *Informer[T]) distribute(n notification[T], isSync bool) {
	for l := range i.listeners {
		if isSync && !l.resyncing {
			continue
		}
		l.add(n)
	}
}

// resyncPeriod is the smallest handler resync period, 0 if none.
func (i *Informer[T]) resyncPeriod() time.Duration {
	i.mu.RLock()
	defer i.mu.RUnlock()
	var p time.Duration
	for l := range i.listeners {
		if l.resyncPeriod > 0 && (p == 0 || l.resyncPeriod < p) {
			p = l.resyncPeriod
		}
	}
	return p
}

// shouldResync marks the listeners whose resync is due; the marks stay
// until the next tick, while the queued Sync deltas are processed.
func (i *Informer[T]) shouldResync() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	now := time.Now()
	due := false
	for l := range i.listeners {
		l.resyncing = l.resyncPeriod > 0 && !now.Before(l.nextResync)
		if l.resyncing {
			l.nextResync = now.Add(l.resyncPeriod)
			due = true
		}
	}
	return due
}

// Registration is one handler's membership in an informer.
type Registration[T object.Object] struct {
	inf *Informer[T]
	l   *listener[T]
}

// HasSynced reports whether the informer has synced and this handler has
// handled (returned from) every object of its initial state. This is the
// one to give a controller (controller.Options.HasSynced,
// WaitForCacheSync): once true, a handler that enqueues keys has enqueued
// one for every object the store held at sync.
func (r *Registration[T]) HasSynced() bool {
	// Order matters: once the informer has synced, every initial add has
	// been queued to the listener, so a zero count then is final.
	return r.inf.HasSynced() && r.l.initialDelivered()
}

// Remove stops deliveries to the handler; buffered notifications are
// dropped. A call already under way when Remove returns finishes, and one
// more may begin (the delivering goroutine checks between calls, and Remove
// does not wait for it, so a handler may call Remove itself). Safe to call
// more than once.
func (r *Registration[T]) Remove() {
	i := r.inf
	i.mu.Lock()
	delete(i.listeners, r.l)
	r.l.cancel()
	i.mu.Unlock()
	i.reflector.KickResync()
}

// AddEventHandler registers h. It may be called at any time before Run
// returns: a handler added to a running informer first gets OnAdd(obj,
// true) for every object in the store, then the changes after that point.
func (i *Informer[T]) AddEventHandler(h Handler[T], opts HandlerOptions) (*Registration[T], error) {
	if h == nil {
		return nil, errors.New("informer: nil handler")
	}
	l := newListener(h, opts.ResyncPeriod)
	i.mu.Lock()
	// Queued before Run, started while it runs, refused once it stops.
	if !i.goListenerLocked(l) {
		i.mu.Unlock()
		return nil, ErrStopped
	}
	l.nextResync = time.Now().Add(l.resyncPeriod)
	for _, obj := range i.store.List() {
		l.add(notification[T]{kind: notifyAdd, obj: obj, flag: true})
	}
	i.listeners[l] = struct{}{}
	i.mu.Unlock()
	if opts.ResyncPeriod > 0 {
		i.reflector.KickResync()
	}
	return &Registration[T]{inf: i, l: l}, nil
}
