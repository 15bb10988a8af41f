package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// Watch opens a watch stream (opts.Watch is forced on). Set
// opts.ResourceVersion to the resourceVersion of a list to see every
// change after it; opts.AllowWatchBookmarks, opts.SendInitialEvents and
// opts.TimeoutSeconds pass through to the server. The stream lasts until
// ctx ends, the server ends it, or Close; Config.Timeout does not apply.
//
// An error response (for example 410 for a resourceVersion the server
// cannot watch from) is returned here as a *wire.Status; after the stream
// opens, errors come from Next.
func (r *Resource[T]) Watch(ctx context.Context, opts wire.ListOptions) (Watcher[T], error) {
	path, err := r.collectionPath(r.namespace)
	if err != nil {
		return nil, err
	}
	opts.Watch = true
	opts.Limit, opts.Continue = 0, ""
	ctx, cancel := context.WithCancel(ctx)
	resp, err := r.c.send(ctx, request{method: http.MethodGet, path: path,
		query: opts.Query(), watch: true, accept: r.accept()})
	if err != nil {
		cancel()
		return nil, err
	}
	return &streamWatcher[T]{ctx: ctx, cancel: cancel, body: resp.Body,
		dec: r.newEventDecoder(resp), closed: make(chan struct{})}, nil
}

// streamWatcher is a Watcher over one HTTP response.
type streamWatcher[T object.Object] struct {
	ctx    context.Context    // ends when the caller's ctx ends or on Close
	cancel context.CancelFunc // unblocks a Read in progress
	body   io.ReadCloser
	dec    eventDecoder[T] // used only by Next's caller

	closeOnce sync.Once
	closed    chan struct{} // closed by Close
}

var _ Watcher[*object.Unstructured] = (*streamWatcher[*object.Unstructured])(nil)

// Next returns the next event. After Close it returns io.EOF; when the
// caller's context ends, its error.
func (w *streamWatcher[T]) Next() (wire.Event[T], error) {
	ev, err := w.dec.next()
	if err == nil {
		return ev, nil
	}
	if w.isClosed() {
		return wire.Event[T]{}, io.EOF
	}
	if ctxErr := w.ctx.Err(); ctxErr != nil && !errors.Is(err, io.EOF) {
		return wire.Event[T]{}, ctxErr
	}
	return wire.Event[T]{}, err
}

// Close ends the stream and unblocks Next. Safe to call more than once,
// from any goroutine.
func (w *streamWatcher[T]) Close() error {
	w.closeOnce.Do(func() {
		close(w.closed)
		w.cancel()
		_ = w.body.Close()
	})
	return nil
}

func (w *streamWatcher[T]) isClosed() bool {
	select {
	case <-w.closed:
		return true
	default:
		return false
	}
}
