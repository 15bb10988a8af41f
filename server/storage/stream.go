package storage

import "context"

type watchStreamKey struct{}

// WithWatchStream returns ctx marked with a watch stream name. A store
// that multiplexes watches (etcd: on gRPC watch streams) gives the
// watches and progress requests made with one name their own stream,
// apart from those of other names and of unnamed contexts: a
// RequestProgress reaches only the watches of its stream, and a watch
// that cannot report progress (etcd answers no progress request on a
// stream while one of its watches is catching up, or starts at a
// revision etcd has not reached) holds up only its own stream. A watch
// cache names its stream after its prefix, so that a client's watch
// cannot delay the proof that the cache is fresh. Stores without streams
// ignore it.
func WithWatchStream(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, watchStreamKey{}, name)
}

// WatchStream is the watch stream name of ctx (WithWatchStream), or "".
func WatchStream(ctx context.Context) string {
	name, _ := ctx.Value(watchStreamKey{}).(string)
	return name
}
