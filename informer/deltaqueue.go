package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/listwatch/listwatch/object"
)

// KnownObjects is what the queue needs to know about the consumer's cache:
// Replace turns keys that are known but missing from a list into Deleted
// deltas, and Resync emits Sync for every known key. *Store satisfies it.
type KnownObjects[T object.Object] interface {
	ListKeys() []string
	GetByKey(key string) (T, bool)
}

// PopProcessFunc handles one key's deltas. It runs with the queue's lock
// held (as client-go's DeltaFIFO does), so it must not call back into the
// queue; the lock is what lets Replace trust KnownObjects. Return an error
// wrapping ErrRequeue to put the deltas back.
type PopProcessFunc[T object.Object] func(key string, deltas Deltas[T], isInInitialList bool) error

// DeltaQueue is a typed DeltaFIFO: a FIFO of keys, each with the deltas that
// accumulated for it since it was last popped.
//
// The zero value is not usable; use NewDeltaQueue. It starts no goroutine.
type DeltaQueue[T object.Object] struct {
	known     KnownObjects[T]
	transform func(T) (T, error)

	// ready holds a token whenever the queue may be non-empty; Pop waits
	// on it. Capacity 1, written without blocking.
	ready chan struct{}

	// mu guards everything below and is held while a PopProcessFunc runs.
	// Lock order: mu, then the KnownObjects' own lock.
	mu sync.Mutex
	// items holds the pending deltas of every queued key; every key in
	// order is in items and vice versa, and items[k] is never empty.
	items map[string]Deltas[T]
	order []string
	// populated is set by the first Replace; initialCount is how many of
	// the keys queued at that moment are still to be popped.
	populated    bool
	initialCount int
	// earlyBegun: BeginEarlyList has said yes once (it never does again);
	// early: that list is being queued and is not complete yet.
	earlyBegun, early bool
	closed            bool
}

// DeltaQueueOptions configure a DeltaQueue.
type DeltaQueueOptions[T object.Object] struct {
	// KnownObjects is the consumer's cache. Without it Replace cannot
	// detect deletions and Resync does nothing.
	KnownObjects KnownObjects[T]
	// Transform, if set, is applied to every object entering the queue
	// through Add, Update, Delete and Replace (not to Sync or to the
	// Deleted deltas Replace synthesises, whose objects came from the
	// cache and were transformed already).
	Transform func(T) (T, error)
}

// NewDeltaQueue returns an empty queue.
func NewDeltaQueue[T object.Object](opts DeltaQueueOptions[T]) *DeltaQueue[T] {
	return &DeltaQueue[T]{
		known:     opts.KnownObjects,
		transform: opts.Transform,
		ready:     make(chan struct{}, 1),
		items:     map[string]Deltas[T]{},
	}
}

// Add queues an Added delta.
func (q *DeltaQueue[T]) Add(obj T) error { return q.push(Added, obj) }

// Update queues an Updated delta.
func (q *DeltaQueue[T]) Update(obj T) error { return q.push(Updated, obj) }

// Delete queues a Deleted delta, unless the object is neither known nor
// queued: then it was already deleted and there is nothing to say. A
// deletion is never dropped: when the transform fails, the object is
// queued as it came and the transform's error returned.
func (q *DeltaQueue[T]) Delete(obj T) error {
	obj, err := q.transformedOr(obj)
	key := object.Key(obj)
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, queued := q.items[key]; !queued {
		if q.known == nil {
			return nil
		}
		if _, ok := q.known.GetByKey(key); !ok {
			return nil
		}
	}
	q.appendLocked(key, Delta[T]{Type: Deleted, Object: obj})
	return err
}

// transformedOr returns obj transformed, or obj itself with the
// transform's error.
func (q *DeltaQueue[T]) transformedOr(obj T) (T, error) {
	t, err := q.transformed(obj)
	if err != nil {
		return obj, err
	}
	return t, nil
}

func (q *DeltaQueue[T]) push(t DeltaType, obj T) error {
	obj, err := q.transformed(obj)
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.appendLocked(object.Key(obj), Delta[T]{Type: t, Object: obj})
	return nil
}

func (q *DeltaQueue[T]) transformed(obj T) (T, error) {
	if q.transform == nil {
		return obj, nil
	}
	out, err := q.transform(obj)
	if err != nil {
		return out, fmt.Errorf("informer: transform %s: %w", object.Key(obj), err)
	}
	return out, nil
}

func (q *DeltaQueue[T]) appendLocked(key string, d Delta[T]) {
	old, queued := q.items[key]
	q.items[key] = dedupDeletes(append(old, d))
	if !queued {
		q.order = append(q.order, key)
		q.signal()
	}
}

func (q *DeltaQueue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Replace queues a Replaced delta for every object in list, and a Deleted
// delta (FinalStateUnknown, carrying the last known state) for every key
// that is known or queued but absent from list, or whose listed object has
// another UID than the known one (deleted and re-created while the watch
// was down: the consumer sees Deleted, then the new object). The first Replace marks
// the queue populated; HasSynced turns true once all keys queued then have
// been popped. rv is the list's resourceVersion, kept for symmetry with
// client-go and for logs.
func (q *DeltaQueue[T]) Replace(list []T, rv string) error {
	objs := slices.Clone(list)
	if err := q.PrepareListed(objs); err != nil {
		return err
	}
	return q.ReplacePrepared(objs, rv)
}

// PrepareListed turns one page of a list, in place, into what Replace
// would store: an object unchanged from the last state the consumer will
// have seen for its key (same UID and resourceVersion as the newest
// queued delta, else as KnownObjects' copy) becomes that state, every
// other object is transformed. Objects without a UID or resourceVersion
// are never taken for unchanged.
//
// A relist calls it page by page, then ReplacePrepared, so that an
// unchanged object is held once, not twice, and a changed one only in its
// transformed form: memory during a relist stays near the steady state
// plus one page. The kept copy equals the listed one by the API's
// contract (an object's resourceVersion changes with every write), and
// was transformed when it arrived; it is not transformed again.
func (q *DeltaQueue[T]) PrepareListed(page []T) error {
	reused := make([]bool, len(page))
	q.mu.Lock()
	for i, o := range page {
		uid, rv := object.UID(o), o.GetResourceVersion()
		if uid == "" || rv == "" {
			continue
		}
		last, ok := q.lastSeenLocked(object.Key(o))
		if ok && object.UID(last) == uid && last.GetResourceVersion() == rv {
			page[i], reused[i] = last, true
		}
	}
	q.mu.Unlock()
	for i, o := range page {
		if reused[i] {
			continue
		}
		t, err := q.transformed(o)
		if err != nil {
			return err
		}
		page[i] = t
	}
	return nil
}

// BeginEarlyList reports whether the list about to be read may be queued
// as it arrives (QueueListed, then EndEarlyList) rather than handed over
// whole to Replace: only the first list of a queue that has never been
// populated and holds nothing, and whose KnownObjects hold nothing, may.
// Such a list has nothing to compare with, so what Replace would queue
// for it is a Replaced delta per object, in list order, and that can be
// queued, and popped, while the rest of the list is still being read.
//
// It says yes at most once in the queue's life. A list begun early that
// fails before its end is finished by the next one through Replace (or
// ReplacePrepared), which then finds the objects queued or popped so far
// and treats them as it would any earlier state: objects gone from the
// new list are deleted.
func (q *DeltaQueue[T]) BeginEarlyList() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.earlyBegun || q.populated || len(q.items) > 0 || (q.known != nil && len(q.known.ListKeys()) > 0) {
		return false
	}
	q.earlyBegun, q.early = true, true
	return true
}

// QueueListed queues part of a list begun with BeginEarlyList: each
// object, transformed, as a Replaced delta. Its deltas are popped with
// isInInitialList set, as those of the first Replace are.
func (q *DeltaQueue[T]) QueueListed(page []T) error {
	objs := make([]T, len(page))
	for i, o := range page {
		t, err := q.transformed(o)
		if err != nil {
			return err
		}
		objs[i] = t
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.early {
		return errors.New("informer: QueueListed without BeginEarlyList")
	}
	for _, o := range objs {
		q.appendLocked(object.Key(o), Delta[T]{Type: Replaced, Object: o})
	}
	return nil
}

// EndEarlyList completes the list begun with BeginEarlyList: the queue is
// populated, as after Replace, and HasSynced turns true once the keys
// still queued have been popped.
func (q *DeltaQueue[T]) EndEarlyList(rv string) error {
	_ = rv
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.early {
		return errors.New("informer: EndEarlyList without BeginEarlyList")
	}
	q.populateLocked()
	return nil
}

// populateLocked marks the queue populated by a complete list, once.
func (q *DeltaQueue[T]) populateLocked() {
	q.early = false
	if !q.populated {
		q.populated = true
		q.initialCount = len(q.order)
	}
}

// ReplacePrepared is Replace for a list whose every page went through
// PrepareListed.
func (q *DeltaQueue[T]) ReplacePrepared(objs []T, rv string) error {
	_ = rv
	q.mu.Lock()
	defer q.mu.Unlock()
	present := make(map[string]struct{}, len(objs))
	for _, o := range objs {
		k := object.Key(o)
		present[k] = struct{}{}
		if last, ok := q.recreatedLocked(k, o); ok {
			// Deleted and created again under the same name while the
			// watch was down: say so, as the watch would have, rather
			// than pass one object off as an update of another.
			q.appendLocked(k, Delta[T]{Type: Deleted, Object: last, FinalStateUnknown: true})
		}
		q.appendLocked(k, Delta[T]{Type: Replaced, Object: o})
	}
	// Keys queued but not listed: the newest queued state is the last known.
	for _, k := range q.order {
		if _, ok := present[k]; ok {
			continue
		}
		newest, _ := q.items[k].Newest()
		if newest.Type == Deleted {
			continue
		}
		q.appendLocked(k, Delta[T]{Type: Deleted, Object: newest.Object, FinalStateUnknown: true})
	}
	if q.known != nil {
		for _, k := range q.known.ListKeys() {
			if _, ok := present[k]; ok {
				continue
			}
			if _, queued := q.items[k]; queued {
				continue // handled above
			}
			last, ok := q.known.GetByKey(k)
			if !ok {
				continue
			}
			q.appendLocked(k, Delta[T]{Type: Deleted, Object: last, FinalStateUnknown: true})
		}
	}
	q.populateLocked()
	return nil
}

// lastSeenLocked is the last state the consumer will have seen for key:
// the newest queued delta's object unless that is a delete, else
// KnownObjects' copy.
func (q *DeltaQueue[T]) lastSeenLocked(key string) (T, bool) {
	var zero T
	if ds, queued := q.items[key]; queued {
		newest, _ := ds.Newest()
		if newest.Type == Deleted {
			return zero, false
		}
		return newest.Object, true
	}
	if q.known == nil {
		return zero, false
	}
	return q.known.GetByKey(key)
}

// recreatedLocked reports whether listed, the object a list has under key,
// is a different object (another UID) from the last state the consumer
// will have seen for key (the newest queued delta, else KnownObjects), and
// returns that last state. Objects without a UID (object.UID is "") are
// never counted as re-created.
func (q *DeltaQueue[T]) recreatedLocked(key string, listed T) (last T, ok bool) {
	if ds, queued := q.items[key]; queued {
		newest, _ := ds.Newest()
		if newest.Type == Deleted {
			return last, false // the delete is queued already
		}
		last, ok = newest.Object, true
	} else if q.known != nil {
		last, ok = q.known.GetByKey(key)
	}
	if !ok {
		return last, false
	}
	lastUID, uid := object.UID(last), object.UID(listed)
	return last, lastUID != "" && uid != "" && lastUID != uid
}

// Resync queues a Sync delta, with the cached object, for every known key
// that has no pending deltas (a pending delta is newer than a resync).
func (q *DeltaQueue[T]) Resync() error {
	if q.known == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.early {
		// A first list still being read early: what the store holds is
		// not yet a state to resync, as it would not be before Replace.
		return nil
	}
	for _, k := range q.known.ListKeys() {
		if _, queued := q.items[k]; queued {
			continue
		}
		if obj, ok := q.known.GetByKey(k); ok {
			q.appendLocked(k, Delta[T]{Type: Sync, Object: obj})
		}
	}
	return nil
}

// Pop waits for a key, removes it with its deltas, and calls process with
// the lock held. It returns ctx.Err() when ctx ends first, ErrQueueClosed
// after Close, and process's error otherwise (after requeueing the deltas
// if that error wraps ErrRequeue).
func (q *DeltaQueue[T]) Pop(ctx context.Context, process PopProcessFunc[T]) error {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			q.signal() // pass Close's wake-up on to the next waiting Pop
			return ErrQueueClosed
		}
		if len(q.order) > 0 {
			err := q.popLocked(process)
			q.mu.Unlock()
			return err
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.ready:
		}
	}
}

func (q *DeltaQueue[T]) popLocked(process PopProcessFunc[T]) error {
	key := q.order[0]
	q.order[0] = ""
	q.order = q.order[1:]
	if len(q.order) > 0 {
		q.signal() // let another Pop proceed without waiting for an Add
	}
	deltas := q.items[key]
	delete(q.items, key)
	counted := q.initialCount > 0
	if counted {
		q.initialCount--
	}
	initial := counted || q.early
	err := process(key, deltas, initial)
	if errors.Is(err, ErrRequeue) {
		for _, d := range deltas {
			q.appendLocked(key, d)
		}
		if last := len(q.order) - 1; counted && last >= 0 && q.order[last] == key {
			// Back among the list's keys still queued (the first
			// initialCount of order), not behind what came after the
			// list: HasSynced waits for it.
			copy(q.order[q.initialCount+1:], q.order[q.initialCount:last])
			q.order[q.initialCount] = key
			q.initialCount++
		}
	}
	return err
}

// Close makes every current and future Pop return ErrQueueClosed.
func (q *DeltaQueue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// HasSynced reports whether the first Replace happened and every key it
// queued has been popped and processed.
func (q *DeltaQueue[T]) HasSynced() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.populated && q.initialCount == 0
}

// Len is the number of queued keys.
func (q *DeltaQueue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
}
