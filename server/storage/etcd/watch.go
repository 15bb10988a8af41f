package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/listwatch/listwatch/server/storage"
)

// Watch starts an etcd watch on prefix from fromRev+1. It asks etcd for
// previous values (WithPrevKV) only with storage.WithPrevValues. Its
// context is derived from ctx: the watch also ends when ctx does.
func (s *Store) Watch(ctx context.Context, prefix string, fromRev int64, progress bool, opts ...storage.WatchOption) (storage.Watcher, error) {
	wctx, cancel := context.WithCancel(watchContext(ctx))
	ops := []clientv3.OpOption{clientv3.WithPrefix()}
	if prefix == "" {
		ops[0] = clientv3.WithFromKey()
		prefix = "\x00"
	}
	if storage.NewWatchRequest(opts...).PrevValues {
		ops = append(ops, clientv3.WithPrevKV())
	}
	if fromRev > 0 {
		ops = append(ops, clientv3.WithRev(fromRev+1))
	}
	if progress {
		ops = append(ops, clientv3.WithProgressNotify())
	}
	ch := s.cli.Watch(wctx, prefix, ops...)
	s.observe("watch", prefix, time.Now(), nil)
	return &watcher{store: s, ch: ch, cancel: cancel, progress: progress, fromRev: fromRev, parent: ctx}, nil
}

// RequestProgress asks etcd to send a progress notification on every
// watch of this client that asked for progress and shares ctx's watch
// stream (storage.WithWatchStream).
func (s *Store) RequestProgress(ctx context.Context) error {
	// Progress requests travel on the gRPC stream of the watches, which
	// clientv3 picks by the outgoing metadata of the context; use the
	// same metadata as Watch.
	if err := s.cli.RequestProgress(watchContext(ctx)); err != nil {
		return fmt.Errorf("etcd: request progress: %w", err)
	}
	return nil
}

// watchContext adds the metadata every watch and progress request of
// this package carries: fail rather than hang when the member has lost
// its leader, as kube-apiserver does. A context with a watch stream name
// (storage.WithWatchStream) also carries the name, which puts its watches
// and progress requests on a gRPC stream of their own: clientv3 shares a
// stream among the contexts with the same outgoing metadata.
func watchContext(ctx context.Context) context.Context {
	ctx = clientv3.WithRequireLeader(ctx)
	if name := storage.WatchStream(ctx); name != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, watchStreamMetadata, name)
	}
	return ctx
}

// watchStreamMetadata is the gRPC metadata key of the watch stream name;
// etcd ignores it.
const watchStreamMetadata = "listwatch-watch-stream"

// watcher adapts a clientv3 watch channel to the pull-style
// storage.Watcher. It is used by one goroutine at a time, except Close,
// which may run concurrently with Next.
type watcher struct {
	store    *Store
	ch       clientv3.WatchChan
	cancel   context.CancelFunc
	parent   context.Context
	progress bool
	fromRev  int64
	// pending holds the not-yet-returned events of the last response.
	pending []storage.Event
	// err, once set, is returned by every later Next.
	err error
	// closed is set by Close, which may run during a Next.
	closed atomic.Bool
}

// Next returns the next event, reading a new etcd response when the
// previous one is used up.
func (w *watcher) Next(ctx context.Context) (storage.Event, error) {
	if w.closed.Load() {
		return storage.Event{}, storage.ErrWatchClosed
	}
	for len(w.pending) == 0 {
		if w.err != nil {
			return storage.Event{}, w.err
		}
		select {
		case resp, ok := <-w.ch:
			if !ok {
				w.err = w.closedError()
				continue
			}
			if err := w.take(resp); err != nil {
				w.err = err
			}
		case <-ctx.Done():
			return storage.Event{}, ctx.Err()
		}
	}
	ev := w.pending[0]
	w.pending = w.pending[1:]
	return ev, nil
}

// closedError says why the channel closed without an error response.
func (w *watcher) closedError() error {
	if err := w.parent.Err(); err != nil && !w.closed.Load() {
		return err
	}
	return storage.ErrWatchClosed
}

// take turns one etcd response into pending events, or an error that
// ends the watch.
func (w *watcher) take(resp clientv3.WatchResponse) error {
	if resp.CompactRevision != 0 {
		w.store.sawCompaction(resp.CompactRevision)
		return &storage.CompactedError{Requested: w.fromRev, Compacted: resp.CompactRevision}
	}
	if err := resp.Err(); err != nil {
		if errors.Is(err, context.Canceled) && w.parent.Err() == nil {
			return storage.ErrWatchClosed
		}
		return fmt.Errorf("etcd: watch: %w", err)
	}
	if resp.IsProgressNotify() {
		if w.progress {
			w.pending = append(w.pending, storage.Event{Type: storage.EventProgress, Revision: resp.Header.Revision})
		}
		return nil
	}
	for _, e := range resp.Events {
		ev, err := toEvent(e)
		if err != nil {
			return err
		}
		w.pending = append(w.pending, ev)
	}
	return nil
}

func toEvent(e *clientv3.Event) (storage.Event, error) {
	rev := e.Kv.ModRevision
	ev := storage.Event{Revision: rev}
	var err error
	switch e.Type {
	case mvccpb.PUT:
		ev.Type = storage.EventPut
		ev.Created = e.Kv.CreateRevision == e.Kv.ModRevision
		if ev.KV, err = toKV(e.Kv, rev); err == nil && e.PrevKv != nil {
			if ev.PrevValue, err = storage.WithResourceVersion(e.PrevKv.Value, e.PrevKv.ModRevision); err != nil {
				err = fmt.Errorf("%w (key %s)", err, e.PrevKv.Key)
			}
		}
	default:
		ev.Type = storage.EventDelete
		ev.KV = storage.KV{Key: string(e.Kv.Key), Revision: rev}
		if e.PrevKv != nil {
			// The deleted object, at the delete's revision, stamped once
			// and shared by KV and PrevValue.
			ev.KV, err = toKV(e.PrevKv, rev)
			ev.PrevValue = ev.KV.Value
		}
	}
	if err != nil {
		return storage.Event{}, err
	}
	return ev, nil
}

// Close cancels the etcd watch. clientv3 closes the channel once its
// stream lets go of the watch; nobody needs to drain it.
func (w *watcher) Close() {
	w.closed.Store(true)
	w.cancel()
}
