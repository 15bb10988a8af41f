package client

import (
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// Watcher is an open watch stream, read one event at a time. It starts no
// goroutine: Next reads from the response body.
type Watcher[T object.Object] interface {
	// Next returns the next ADDED, MODIFIED, DELETED or BOOKMARK event.
	// It returns io.EOF when the server ends the stream cleanly (for
	// example at timeoutSeconds), a *wire.Status error (use IsGone and
	// friends) when the server sends an ERROR event, and the transport's
	// error (or the context's) otherwise.
	Next() (wire.Event[T], error)
	// Close ends the stream. It is safe to call more than once and from
	// another goroutine, to unblock Next.
	Close() error
}
