package etcdtest

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchSpy records the watch requests a clientv3.Client makes, so a test
// can check what a watch asked etcd for.
type WatchSpy struct {
	clientv3.Watcher
	mu   sync.Mutex
	reqs []WatchRequest
}

// WatchRequest is one recorded watch.
type WatchRequest struct {
	Key    string
	PrevKV bool
}

// SpyWatches makes every later watch of e.Client go through the returned
// spy. Call it before anything watches.
func (e *Etcd) SpyWatches() *WatchSpy {
	s := &WatchSpy{Watcher: e.Client.Watcher}
	e.Client.Watcher = s
	return s
}

// Watch records the request and passes it on.
func (s *WatchSpy) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	op := clientv3.OpGet(key, opts...)
	s.mu.Lock()
	s.reqs = append(s.reqs, WatchRequest{Key: key, PrevKV: op.IsPrevKV()})
	s.mu.Unlock()
	return s.Watcher.Watch(ctx, key, opts...)
}

// Requests returns the watches recorded so far.
func (s *WatchSpy) Requests() []WatchRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]WatchRequest(nil), s.reqs...)
}
