package direct

import (
	"context"
	"time"
)

// DefaultBookmarkInterval is how often Run asks the store for progress
// while watches that allow bookmarks are open; kube-apiserver's watch
// cache bookmarks each watcher about once a minute.
const DefaultBookmarkInterval = time.Minute

// Option configures a Reader.
type Option func(*Reader)

// WithBookmarkInterval sets how often Run requests progress (and so
// bookmarks) for open watches that allow bookmarks.
func WithBookmarkInterval(d time.Duration) Option {
	return func(r *Reader) {
		if d > 0 {
			r.bookmarkInterval = d
		}
	}
}

// Run asks the store for a progress notification every bookmark interval
// while at least one watch that allows bookmarks is open, until ctx ends.
//
// Why it is needed: a store watch reports progress on its own only when
// the store's periodic notification fires (etcd: every
// --watch-progress-notify-interval, 10 minutes by default, and only to
// watches idle for a whole interval). One request per interval is
// broadcast by etcd to every progress-enabled watch of the client, so the
// cost does not grow with the number of watchers. etcd drops a request
// while any watch on the stream is still catching up; the next tick asks
// again. Without Run, bookmarks still come, at etcd's own pace.
func (r *Reader) Run(ctx context.Context) error {
	t := time.NewTicker(r.bookmarkInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if r.bookmarkWatches.Load() == 0 {
				continue
			}
			// An error (etcd unreachable, say) is retried on the next
			// tick; the watches themselves report the outage.
			_ = r.store.RequestProgress(ctx)
		}
	}
}
