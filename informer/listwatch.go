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

// ListWatchFuncs adapts two functions to a ListerWatcher.
type ListWatchFuncs[T object.Object] struct {
	ListFunc  func(ctx context.Context, opts wire.ListOptions) (*wire.List[T], error)
	WatchFunc func(ctx context.Context, opts wire.ListOptions) (client.Watcher[T], error)
}

var _ ListerWatcher[*object.Unstructured] = ListWatchFuncs[*object.Unstructured]{}

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
	return ListWatchFuncs[T]{
		ListFunc: func(ctx context.Context, o wire.ListOptions) (*wire.List[T], error) {
			return c.List(ctx, narrow(o))
		},
		WatchFunc: func(ctx context.Context, o wire.ListOptions) (client.Watcher[T], error) {
			return c.Watch(ctx, narrow(o))
		},
	}
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
