package informer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/listwatch/listwatch/object"
)

type notificationKind uint8

const (
	notifyAdd notificationKind = iota
	notifyUpdate
	notifyDelete
)

// notification is one queued handler call.
type notification[T object.Object] struct {
	kind notificationKind
	old  T // notifyUpdate only
	obj  T
	// flag is isInInitialList for adds and finalStateUnknown for deletes.
	flag bool
}

// listener buffers notifications for one handler and delivers them on its
// own goroutine, so a slow handler delays nobody else.
//
// The buffer is unbounded but double-buffered: the producer appends to
// pending under mu; the delivering goroutine swaps pending for an empty
// slice and works through the batch without the lock, then recycles it.
type listener[T object.Object] struct {
	h            Handler[T]
	resyncPeriod time.Duration
	wake         chan struct{} // capacity 1

	// Guarded by the informer's mu.
	nextResync time.Time
	resyncing  bool

	// stop ends the delivery goroutine when cancel (Remove) is called.
	stop   context.Context
	cancel context.CancelFunc

	// mu guards pending, spare and initialPending.
	mu      sync.Mutex
	pending []notification[T]
	spare   []notification[T]
	// initialPending counts queued or in-flight adds with
	// isInInitialList set; the registration has synced once the informer
	// has and this is zero.
	initialPending int
	// backlog counts notifications added and not yet delivered, for the
	// handler queue depth metric.
	backlog atomic.Int64
}

func newListener[T object.Object](h Handler[T], period time.Duration) *listener[T] {
	if period > 0 && period < MinResyncPeriod {
		period = MinResyncPeriod
	}
	stop, cancel := context.WithCancel(context.Background())
	return &listener[T]{h: h, resyncPeriod: period, wake: make(chan struct{}, 1), stop: stop, cancel: cancel}
}

func (l *listener[T]) add(n notification[T]) {
	l.backlog.Add(1)
	l.mu.Lock()
	l.pending = append(l.pending, n)
	if n.kind == notifyAdd && n.flag {
		l.initialPending++
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener[T]) initialDelivered() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.initialPending == 0
}

// run delivers notifications until ctx ends; what is still buffered then
// is dropped.
func (l *listener[T]) run(ctx context.Context) {
	for {
		l.mu.Lock()
		batch := l.pending
		l.pending, l.spare = l.spare[:0], nil
		l.mu.Unlock()
		if len(batch) == 0 {
			l.mu.Lock()
			l.spare = batch
			l.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-l.wake:
				continue
			}
		}
		for i := range batch {
			if ctx.Err() != nil {
				return
			}
			l.deliver(batch[i])
			l.backlog.Add(-1)
			batch[i] = notification[T]{} // let the objects go
		}
		l.mu.Lock()
		if cap(batch) <= 4096 { // keep a modest buffer, free a burst's
			l.spare = batch[:0]
		}
		l.mu.Unlock()
	}
}

func (l *listener[T]) deliver(n notification[T]) {
	switch n.kind {
	case notifyAdd:
		l.h.OnAdd(n.obj, n.flag)
		if n.flag {
			l.mu.Lock()
			l.initialPending--
			l.mu.Unlock()
		}
	case notifyUpdate:
		l.h.OnUpdate(n.old, n.obj)
	case notifyDelete:
		l.h.OnDelete(n.obj, n.flag)
	}
}
