package informer

import (
	"context"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// ListerWatcher is the informer's view of one resource on the server.
// *client.Resource[T] satisfies it; so does ListWatchFuncs.
//
// Both calls must honour ctx: cancelling it ends the request and, for
// Watch, makes the Watcher's Next return.
type ListerWatcher[T object.Object] interface {
	List(ctx context.Context, opts wire.ListOptions) (*wire.List[T], error)
	Watch(ctx context.Context, opts wire.ListOptions) (client.Watcher[T], error)
}

// ChunkLister is implemented by a ListerWatcher that can hand over the
// items of a LIST page while it is still reading the page, in slices of
// up to chunk items (*client.Resource[T] does; see its ListChunks). The
// reflector then prepares, queues and stores the first items of a page
// while the rest are decoded, and holds about two chunks decoded but not
// yet stored rather than the page: kube-apiserver answers a first LIST
// (resourceVersion "0") in one page whatever the limit.
//
// ListChunks calls each, in order, with slices the callee may keep, and
// returns the page's metadata once the page has been read; an error
// from each stops it and is returned as is.
type ChunkLister[T object.Object] interface {
	ListChunks(ctx context.Context, opts wire.ListOptions, chunk int, each func([]T) error) (wire.ListMeta, error)
}

// ListWatchFuncs adapts functions to a ListerWatcher and a ChunkLister.
type ListWatchFuncs[T object.Object] struct {
	ListFunc  func(ctx context.Context, opts wire.ListOptions) (*wire.List[T], error)
	WatchFunc func(ctx context.Context, opts wire.ListOptions) (client.Watcher[T], error)
	// ListChunksFunc is optional: without it ListChunks calls ListFunc and
	// hands over the page in one chunk.
	ListChunksFunc func(ctx context.Context, opts wire.ListOptions, chunk int, each func([]T) error) (wire.ListMeta, error)

	// ListsUntouched declares that ListChunksFunc and ListFunc hand over
	// the items a *client.Resource[T] decoded as they are, never
	// modifying one (a wrapper that only observes, as
	// NewListWatchFromClient's, which sets it over a *client.Resource[T]).
	// An informer may then decode the parts of its list items that
	// repeat once and share them from the start (package doc, Memory).
	// Leave it false when the funcs modify items or build their own.
	ListsUntouched bool
}

// listsUntouched reports whether lw hands the reflector the items the
// client decoded, as they are: *client.Resource[T], or ListWatchFuncs
// that say so (ListsUntouched). Only then may a list's items share
// parts from their decoding on (protomemo): a ListerWatcher of the
// user's own may modify the items it lists before handing them over.
func listsUntouched[T object.Object](lw ListerWatcher[T]) bool {
	switch l := lw.(type) {
	case *client.Resource[T]:
		return true
	case ListWatchFuncs[T]:
		return l.ListsUntouched
	}
	return false
}

var (
	_ ListerWatcher[*object.Unstructured] = ListWatchFuncs[*object.Unstructured]{}
	_ ChunkLister[*object.Unstructured]   = ListWatchFuncs[*object.Unstructured]{}
	_ ChunkLister[*object.Unstructured]   = (*client.Resource[*object.Unstructured])(nil)
)

// ListChunks calls ListChunksFunc, or ListFunc.
func (f ListWatchFuncs[T]) ListChunks(ctx context.Context, opts wire.ListOptions, chunk int, each func([]T) error) (wire.ListMeta, error) {
	if f.ListChunksFunc != nil {
		return f.ListChunksFunc(ctx, opts, chunk, each)
	}
	return listInOneChunk(ctx, f, opts, each)
}

// listInOneChunk is ListChunks for a ListerWatcher that only lists whole
// pages.
func listInOneChunk[T object.Object](ctx context.Context, lw ListerWatcher[T], opts wire.ListOptions, each func([]T) error) (wire.ListMeta, error) {
	page, err := lw.List(ctx, opts)
	if err != nil {
		return wire.ListMeta{}, err
	}
	if len(page.Items) > 0 {
		if err := each(page.Items); err != nil {
			return wire.ListMeta{}, err
		}
	}
	return page.Metadata, nil
}

// List calls ListFunc.
func (f ListWatchFuncs[T]) List(ctx context.Context, opts wire.ListOptions) (*wire.List[T], error) {
	return f.ListFunc(ctx, opts)
}

// Watch calls WatchFunc.
func (f ListWatchFuncs[T]) Watch(ctx context.Context, opts wire.ListOptions) (client.Watcher[T], error) {
	return f.WatchFunc(ctx, opts)
}

// NewListWatchFromClient narrows c (typically a *client.Resource[T], which
// already carries its namespace: use the client's namespaced resource to
// watch one namespace) to the objects matching labelSelector and
// fieldSelector, on every List and Watch. Empty selectors select
// everything. A selector the caller already put in the options is kept and
// ANDed with these.
func NewListWatchFromClient[T object.Object](c ListerWatcher[T], labelSelector, fieldSelector string) ListerWatcher[T] {
	narrow := func(o wire.ListOptions) wire.ListOptions {
		o.LabelSelector = andSelector(o.LabelSelector, labelSelector)
		o.FieldSelector = andSelector(o.FieldSelector, fieldSelector)
		return o
	}
	lw := ListWatchFuncs[T]{
		ListFunc: func(ctx context.Context, o wire.ListOptions) (*wire.List[T], error) {
			return c.List(ctx, narrow(o))
		},
		WatchFunc: func(ctx context.Context, o wire.ListOptions) (client.Watcher[T], error) {
			return c.Watch(ctx, narrow(o))
		},
	}
	if cl, ok := c.(ChunkLister[T]); ok {
		lw.ListChunksFunc = func(ctx context.Context, o wire.ListOptions, chunk int, each func([]T) error) (wire.ListMeta, error) {
			return cl.ListChunks(ctx, narrow(o), chunk, each)
		}
	}
	lw.ListsUntouched = listsUntouched(c)
	return lw
}

// andSelector joins two selectors; in both languages a comma means AND.
func andSelector(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	default:
		return a + "," + b
	}
}
