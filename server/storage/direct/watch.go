package direct

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// WatchList opens a watch under prefix. Errors the store reports later,
// such as a compacted start revision, come from the stream's Next.
func (r *Reader) WatchList(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.EventStream, error) {
	mode, err := modeOf(storage.ListPosition{Mode: opts.Mode, Revision: opts.Revision})
	if err != nil {
		return nil, err
	}
	s := &stream{store: r.store, pageSize: r.pageSize, prefix: prefix, pred: opts.Predicate, bookmarks: opts.AllowBookmarks}
	sendInitial, end := opts.InitialEvents()
	var from int64
	switch {
	case sendInitial:
		// The state at R >= the minimum; modes without one read the latest.
		if from, err = s.startInitial(ctx, mode.minimum); err != nil {
			return nil, err
		}
		s.sendEnd = end
	case opts.Revision > 0:
		// The changes after the revision.
		from = opts.Revision
	default:
		// No revision and no initial events: the changes from now.
		if from, err = r.store.CurrentRevision(ctx); err != nil {
			return nil, err
		}
	}
	// Previous values make a DELETED event carry the deleted object, and
	// let a selector see an object stop matching.
	if s.w, err = r.store.Watch(ctx, prefix, from, opts.AllowBookmarks, storage.WithPrevValues()); err != nil {
		return nil, err
	}
	if opts.AllowBookmarks {
		s.bookmarkWatches = &r.bookmarkWatches
		s.bookmarkWatches.Add(1)
	}
	return s, nil
}

// stream is one watch: first the initial state, page by page, then the
// store's events translated for the predicate. Next is called by one
// goroutine at a time; Close may run concurrently with it.
type stream struct {
	store     storage.Interface
	prefix    string
	pred      storage.Predicate
	bookmarks bool
	pageSize  int64

	// initial holds the unsent items of the current initial page;
	// nextKey is where the next initial page starts ("" when there is
	// none); initRev is the revision the initial state is read at.
	initial []storage.KV
	nextKey string
	initRev int64
	// sendEnd is true until the initial-events-end bookmark is sent.
	sendEnd bool

	w      storage.Watcher
	closed atomic.Bool
	// bookmarkWatches is the Reader's count of bookmark watches, which
	// this one is in until Close; nil without AllowBookmarks.
	bookmarkWatches *atomic.Int64
}

var _ storage.EventStream = (*stream)(nil)

// startInitial reads the first page of the current state, which must be
// at least at revision minimum, and returns its revision.
func (s *stream) startInitial(ctx context.Context, minimum int64) (int64, error) {
	res, err := s.store.List(ctx, s.prefix, storage.ListOptions{Limit: s.pageSize})
	if err != nil {
		return 0, err
	}
	if err := checkMinimum(res.Revision, minimum); err != nil {
		return 0, err
	}
	s.initRev = res.Revision
	s.setPage(res)
	return res.Revision, nil
}

func (s *stream) setPage(res storage.ListResult) {
	s.initial = res.Items
	s.nextKey = ""
	if res.More && len(res.Items) > 0 {
		s.nextKey = res.Items[len(res.Items)-1].Key + "\x00"
	}
}

// Next returns the next event to send.
func (s *stream) Next(ctx context.Context) (storage.WatchEvent, error) {
	for {
		if s.closed.Load() {
			return storage.WatchEvent{}, storage.ErrWatchClosed
		}
		ev, ok, err := s.next(ctx)
		if err != nil || ok {
			return ev, err
		}
	}
}

// next produces at most one event; ok is false when the step produced
// none (a filtered-out item or event, or a page read).
func (s *stream) next(ctx context.Context) (ev storage.WatchEvent, ok bool, err error) {
	switch {
	case len(s.initial) > 0:
		kv := s.initial[0]
		s.initial = s.initial[1:]
		match, err := s.matches(kv.Value)
		if err != nil || !match {
			return storage.WatchEvent{}, false, err
		}
		return storage.WatchEvent{Type: wire.Added, Object: kv.Value, Revision: kv.Revision}, true, nil
	case s.nextKey != "":
		res, err := s.store.List(ctx, s.prefix, storage.ListOptions{Revision: s.initRev, Limit: s.pageSize, StartKey: s.nextKey})
		if err != nil {
			return storage.WatchEvent{}, false, err
		}
		s.setPage(res)
		return storage.WatchEvent{}, false, nil
	case s.sendEnd:
		s.sendEnd = false
		return storage.WatchEvent{Type: wire.Bookmark, Revision: s.initRev, InitialEventsEnd: true}, true, nil
	}
	e, err := s.w.Next(ctx)
	if err != nil {
		return storage.WatchEvent{}, false, err
	}
	return s.translate(e)
}

// translate turns a store event into the event a watcher of the
// predicate must see, if any.
func (s *stream) translate(e storage.Event) (ev storage.WatchEvent, ok bool, err error) {
	switch e.Type {
	case storage.EventProgress:
		if !s.bookmarks {
			return storage.WatchEvent{}, false, nil
		}
		return storage.WatchEvent{Type: wire.Bookmark, Revision: e.Revision}, true, nil
	case storage.EventDelete:
		match, err := s.matches(e.KV.Value)
		if err != nil || !match {
			return storage.WatchEvent{}, false, err
		}
		return storage.WatchEvent{Type: wire.Deleted, Object: e.KV.Value, Revision: e.Revision}, true, nil
	}
	cur, err := s.matches(e.KV.Value)
	if err != nil {
		return storage.WatchEvent{}, false, err
	}
	// A previous value that is unknown counts as not matching, as in
	// kube-apiserver: the client learns the object through ADDED.
	prev := false
	if !e.Created && e.PrevValue != nil {
		if prev, err = s.matches(e.PrevValue); err != nil {
			return storage.WatchEvent{}, false, err
		}
	}
	switch {
	case cur && prev:
		return storage.WatchEvent{Type: wire.Modified, Object: e.KV.Value, Revision: e.Revision}, true, nil
	case cur:
		return storage.WatchEvent{Type: wire.Added, Object: e.KV.Value, Revision: e.Revision}, true, nil
	case prev:
		// Stopped matching: the client must drop it. kube-apiserver
		// sends the last value the client could see (the one that
		// matched) at the update's revision.
		old, err := withRevision(e.PrevValue, e.Revision)
		if err != nil {
			return storage.WatchEvent{}, false, err
		}
		return storage.WatchEvent{Type: wire.Deleted, Object: old, Revision: e.Revision}, true, nil
	}
	return storage.WatchEvent{}, false, nil
}

func (s *stream) matches(value []byte) (bool, error) {
	ok, err := s.pred.Matches(value)
	if err != nil {
		return false, fmt.Errorf("direct: %w", err)
	}
	return ok, nil
}

// Close ends the store watch. It is safe to call more than once.
func (s *stream) Close() {
	if s.closed.Swap(true) {
		return
	}
	if s.bookmarkWatches != nil {
		s.bookmarkWatches.Add(-1)
	}
	s.w.Close()
}

// Buffered reports whether Next would return without waiting for etcd:
// initial events remain (without a predicate, every one is sent), or the
// initial-events-end bookmark is still due. Only the goroutine calling
// Next may call it.
func (s *stream) Buffered() bool {
	if s.sendEnd {
		return true
	}
	return s.pred.Empty() && (len(s.initial) > 0 || s.nextKey != "")
}

var _ storage.Buffered = (*stream)(nil)
