package informer

import "errors"

var (
	// ErrQueueClosed is returned by DeltaQueue.Pop after Close.
	ErrQueueClosed = errors.New("informer: delta queue closed")
	// ErrRequeue, returned (possibly wrapped) by a PopProcessFunc, puts the
	// popped deltas back in the queue, ahead of nothing: they are appended
	// to the key's pending deltas and the key goes to the back of the queue.
	ErrRequeue = errors.New("informer: requeue")
	// ErrInvalidIndex is returned for a lookup in an index that was never
	// registered.
	ErrInvalidIndex = errors.New("informer: no such index")
	// ErrIndexerConflict is returned when an index name is registered twice.
	ErrIndexerConflict = errors.New("informer: index already registered")
	// ErrStarted is returned by calls that are only valid before Run.
	ErrStarted = errors.New("informer: already started")
	// ErrNoInitialEventsEnd is recorded when a streaming initial list ended
	// without the bookmark that marks its end; the reflector falls back to
	// LIST.
	ErrNoInitialEventsEnd = errors.New("informer: watch ended before the initial-events-end bookmark")
)

// ErrStopped is returned by AddEventHandler after the informer's Run
// returned.
var ErrStopped = errors.New("informer: stopped")
