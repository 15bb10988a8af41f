package storage

import (
	"context"
	"errors"

	"github.com/listwatch/listwatch/wire"
)

// This file is the contract between the server's handlers and whatever
// serves their reads: a direct reader over an Interface (storage/etcd), or
// the watch cache (storage/cache). Both keep Kubernetes' resourceVersion
// semantics for LIST and WATCH; the handlers only translate to and from
// HTTP.

// GetListOptions are a LIST request's read parameters, already validated
// by the server (see ReadSpec.ListOptions). Readers switch on Mode and
// take where to start from Position.
type GetListOptions struct {
	// Mode and Revision say which state is read (see ReadMode); a
	// continue token overrides them.
	Mode     ReadMode
	Revision int64
	// Limit caps the number of items; 0 means none. Always honoured.
	Limit int64
	// Continue is the token from the previous page, if any.
	Continue string
	// Predicate filters items; the zero value keeps everything.
	Predicate Predicate
}

// ListPage is one page of a LIST.
type ListPage struct {
	// Items are the matching objects in key order; Values carry their RVs.
	Items []KV
	// Revision is the list's resourceVersion; for every page of a paged
	// list it is the first page's.
	Revision int64
	// Continue is set when more items may follow.
	Continue string
	// RemainingItemCount, when known, counts the items after this page;
	// nil on the last page and when a predicate makes it unknowable.
	RemainingItemCount *int64
	// Runs, when set, mark stretches of Items that the reader keeps
	// unchanged together, in order and disjoint; items outside every run
	// stand alone. Only a page read without a predicate has them.
	Runs []Run
}

// WatchOptions are a WATCH request's parameters, already validated by
// the server (see ReadSpec.WatchOptions).
type WatchOptions struct {
	// Mode and Revision say where the watch starts: ReadMostRecent at
	// least at the store's current revision, ReadAny wherever the reader
	// is, ReadNotOlderThan at a state at least at Revision (initial
	// events), ReadExact with the changes after Revision.
	Mode     ReadMode
	Revision int64
	// SendInitialEvents asks for the current state as ADDED events first,
	// ended by a bookmark with InitialEventsEnd set; see InitialEvents.
	SendInitialEvents *bool
	// AllowBookmarks lets the reader send periodic bookmarks.
	AllowBookmarks bool
	Predicate      Predicate
}

// WatchEvent is one event ready to send.
type WatchEvent struct {
	Type wire.EventType
	// Object is the object's JSON (with its resourceVersion); nil for
	// bookmarks, which the server renders for the resource's kind.
	Object []byte
	// Revision of the event: the object's RV, or the bookmark's RV.
	Revision int64
	// InitialEventsEnd marks the bookmark that ends the initial events.
	InitialEventsEnd bool
	// Frame, if set, is the whole encoded line (wire.EventLine), shared
	// by every watcher of the event.
	Frame []byte
	// ObjectAlt and FrameAlt, if set, memoize other encodings of Object
	// and of the whole frame (the server's protobuf ones), shared by
	// every watcher of the event.
	ObjectAlt, FrameAlt *Memo
}

// EventStream is an open watch.
type EventStream interface {
	// Next blocks for the next event. An error ends the stream: a
	// *CompactedError (410 Expired on the wire), ctx.Err(), or
	// ErrWatchClosed.
	Next(ctx context.Context) (WatchEvent, error)
	Close()
}

// Buffered is implemented by event streams that can tell whether Next
// would return at once. The server flushes a watch response only when it
// would not, so a burst such as the initial events of a 100k-object watch
// goes out in large writes instead of one flush per event.
type Buffered interface {
	Buffered() bool
}

// ListWatcher serves LIST and WATCH with Kubernetes semantics under a
// key prefix.
type ListWatcher interface {
	GetList(ctx context.Context, prefix string, opts GetListOptions) (ListPage, error)
	WatchList(ctx context.Context, prefix string, opts WatchOptions) (EventStream, error)
}

// Errors a ListWatcher returns beyond those of Interface.
var (
	// ErrInvalidContinue: a continue token that is malformed or names a
	// key outside the listed prefix (400 BadRequest).
	ErrInvalidContinue = errors.New("storage: invalid continue token")
	// ErrTooLargeResourceVersion: the revision asked for did not arrive in
	// time (504 Timeout with a "Too large resource version" message).
	ErrTooLargeResourceVersion = errors.New("storage: too large resource version")
)

// Peeker is implemented by readers that hold the objects in memory (the
// watch cache). Peek returns the object under key as the reader holds it
// now, which may be behind storage, without reading storage; ok is false
// when the reader holds no such object or is not ready. A write that
// starts from a peeked object must read storage and start again before
// it fails on what it read (a precondition, a conflict), as kube's
// GuaranteedUpdate does with the watch cache's copy.
type Peeker interface {
	Peek(key string) (kv KV, ok bool)
}
