package storage

import "context"

// KV is one stored object.
type KV struct {
	Key string
	// Value is the object's JSON, its metadata.resourceVersion set to Revision.
	Value []byte
	// Revision is the revision of the last write of Key (its mod revision).
	// For a deleted object in an Event it is the revision of the delete.
	Revision int64
	// Alt, set by the watch cache, memoizes another encoding of Value
	// (the server's protobuf bytes) for as long as the cache holds it.
	Alt *Memo
}

// ListOptions selects a page of a range read.
type ListOptions struct {
	// Revision to read at; 0 reads the latest. A revision older than the
	// compacted one fails with a *CompactedError.
	Revision int64
	// Limit is the maximum number of items; 0 means no limit.
	Limit int64
	// StartKey, if set, is the first key to return (inclusive). It must lie
	// inside the prefix; implementations return ErrInvalidStartKey otherwise.
	StartKey string
}

// ListResult is one page of a range read.
type ListResult struct {
	Items []KV
	// Revision the page was read at: every item's Revision is <= it.
	Revision int64
	// More is true if keys after the last item remain in the prefix.
	More bool
	// Remaining counts the keys after this page, when More is true and the
	// implementation knows it; -1 when unknown.
	Remaining int64
}

// EventType says what happened to a key.
type EventType int

const (
	// EventPut is a create or an update; Event.Created tells which.
	EventPut EventType = iota + 1
	// EventDelete carries the last value before the delete, if the watch
	// asked for previous values (WithPrevValues).
	EventDelete
	// EventProgress carries no object: it says the watch has seen every
	// event up to and including Event.Revision (a bookmark).
	EventProgress
)

// Event is one change seen by a watch.
type Event struct {
	Type EventType
	// KV is the new value for EventPut, the last value for EventDelete
	// (with KV.Revision set to the delete's revision, and Value nil unless
	// the watch asked for previous values), empty for progress.
	KV KV
	// PrevValue is the value before an update or delete, when the watch
	// asked for previous values (WithPrevValues) and it is known; it lets
	// a filtered watch turn "stopped matching" into a delete. For an
	// EventDelete it is KV.Value.
	PrevValue []byte
	// Created is true when an EventPut created the key.
	Created bool
	// Revision of the event; for EventProgress, the revision reached.
	Revision int64
}

// Watcher delivers the events of one watch, in revision order.
type Watcher interface {
	// Next blocks until the next event. It returns a *CompactedError if the
	// start revision was compacted, ctx.Err() when ctx ends, and
	// ErrWatchClosed after Close.
	Next(ctx context.Context) (Event, error)
	// Close ends the watch and frees its resources. It is safe to call
	// more than once.
	Close()
}

// Reader is the read half of storage.
type Reader interface {
	// Get returns the current value of key, or ErrNotFound.
	Get(ctx context.Context, key string) (KV, error)
	// List returns a page of the keys under prefix, in key order.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)
	// CurrentRevision returns the store's latest revision through a
	// linearizable read.
	CurrentRevision(ctx context.Context) (int64, error)
}

// Writer is the write half of storage. Each write returns the revision it
// was given, which is the written object's new resourceVersion.
type Writer interface {
	// Create stores value under a new key, or fails with ErrExists.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update replaces the value of key if its revision is still expectRev,
	// else fails with ErrConflict (or ErrNotFound if key is gone).
	Update(ctx context.Context, key string, value []byte, expectRev int64) (int64, error)
	// Delete removes key if its revision is expectRev (0: any revision) and
	// returns the last value, its Revision set to the delete's revision.
	// It fails with ErrNotFound or ErrConflict.
	Delete(ctx context.Context, key string, expectRev int64) (KV, error)
}

// Watchable starts watches.
type Watchable interface {
	// Watch returns the events under prefix with a revision greater than
	// fromRev. If progress is true the watcher also delivers EventProgress
	// events when the store is idle, and on RequestProgress. Options ask
	// for more than keys and new values (see WithPrevValues).
	Watch(ctx context.Context, prefix string, fromRev int64, progress bool, opts ...WatchOption) (Watcher, error)
	// RequestProgress asks every progress-enabled watch to report the
	// current revision soon.
	RequestProgress(ctx context.Context) error
}

// WatchRequest is the optional part of a watch request, set by
// WatchOptions.
type WatchRequest struct {
	// PrevValues asks for the value before each update and delete
	// (Event.PrevValue, and the deleted object in an EventDelete's KV).
	// Only a watch that uses them should ask: the store then sends every
	// changed object twice.
	PrevValues bool
}

// WatchOption sets part of a WatchRequest.
type WatchOption func(*WatchRequest)

// WithPrevValues asks a watch for previous values (WatchRequest.PrevValues).
func WithPrevValues() WatchOption {
	return func(r *WatchRequest) { r.PrevValues = true }
}

// NewWatchRequest applies opts to the zero request.
func NewWatchRequest(opts ...WatchOption) WatchRequest {
	var r WatchRequest
	for _, o := range opts {
		o(&r)
	}
	return r
}

// Compactor discards history.
type Compactor interface {
	// Compact discards the history of revisions before rev.
	Compact(ctx context.Context, rev int64) error
}

// CompactRevisioner is a store that knows how far its history has been
// compacted.
type CompactRevisioner interface {
	// CompactRevision is the newest revision the history is known to be
	// compacted to (a read at an older one fails with a
	// *CompactedError), 0 when none is known.
	CompactRevision() int64
}

// Interface is a complete store.
type Interface interface {
	Reader
	Writer
	Watchable
	Compactor
}
