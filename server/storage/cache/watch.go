package cache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// preDeadlineBookmark is how long before a watch's deadline a watcher
// that allows bookmarks gets one (kube's cacher: 2 s).
const preDeadlineBookmark = 2 * time.Second

// WatchList opens a watch under prefix (the cache's prefix or a narrower
// one). Where it starts:
//
//   - SendInitialEvents=true: the state (at least RV when RV is set; at
//     least etcd's current revision when RV is unset) as ADDED events, a
//     bookmark with InitialEventsEnd if bookmarks are allowed, then the
//     changes after that state. (The server's HTTP watches from RV unset
//     or "0" come here: kube's defaults make them ask for initial events.)
//   - RV unset or "0" (SendInitialEvents unset): the current state as
//     ADDED events, then the changes. With SendInitialEvents=false: only
//     the changes from now on.
//   - RV=N: the changes after N. If the history no longer reaches back to
//     N, the first Next returns a *storage.CompactedError. If the cache
//     has not reached N, the watch starts all the same and sends the
//     changes after N when they come, as kube's cacher does (only a
//     watch with initial events, ReadNotOlderThan, waits for N or fails
//     with ErrTooLargeResourceVersion).
//
// With AllowBookmarks, bookmarks come every BookmarkInterval and, when
// ctx has a deadline, once more 2 s before it, as kube's cacher sends
// them; as there, only once the cache has passed the revision the watch
// began at (see watcher.floor), so a watch of a quiet resource gets none.
//
// The stream has no goroutine of its own: the caller's Next reads the
// cache's shared history, so an event is stored and encoded once however
// many watchers send it.
func (c *Cache) WatchList(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.EventStream, error) {
	if err := c.checkPrefix(prefix); err != nil {
		return nil, err
	}
	if !c.waitFor(ctx, 0, c.cfg.FreshnessTimeout, nil) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, ErrNotReady
	}
	rev := opts.Revision // the revision the watch must at least start at
	switch opts.Mode {
	case storage.ReadMostRecent:
		// As kube's cacher: only a watch that asked for initial events
		// (sendInitialEvents=true, which kube's defaults give every HTTP
		// watch from "now") waits for the cache to reach etcd's current
		// revision; one without starts from the cache's state at once.
		if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
			cur, err := c.cfg.Store.CurrentRevision(ctx)
			if err != nil {
				return nil, err
			}
			if !c.waitFresh(ctx, cur) {
				return nil, c.tooLarge(ctx, cur)
			}
		}
		rev = 0
	case storage.ReadAny:
		rev = 0
	case storage.ReadExact:
		if rev <= 0 {
			return nil, fmt.Errorf("cache: %v watch without a revision", opts.Mode)
		}
		// The changes after rev. As kube's cacher, a watch from a
		// revision the cache has not reached is not refused (only one
		// asking for initial events waits for freshness): it starts now
		// and sends the changes after that revision once they come. A
		// prefix nobody writes to learns of newer revisions only from
		// progress notifications: ask for one, so that the cache soon
		// reaches the revision.
		c.mu.RLock()
		behind := c.rev < rev
		c.mu.RUnlock()
		if behind {
			c.requestProgress(ctx)
		}
	case storage.ReadNotOlderThan:
		if rev <= 0 {
			return nil, fmt.Errorf("cache: %v watch without a revision", opts.Mode)
		}
		// Initial events from a state not older than rev: wait for it.
		if !c.waitFor(ctx, rev, c.cfg.FreshnessTimeout, func() { c.requestProgress(ctx) }) {
			return nil, c.tooLarge(ctx, rev)
		}
	default:
		return nil, fmt.Errorf("cache: unknown read mode %v", opts.Mode)
	}

	w := &watcher{c: c, prefix: prefix, pred: opts.Predicate, bookmarks: opts.AllowBookmarks, closed: make(chan struct{})}
	if d, ok := ctx.Deadline(); ok && w.bookmarks {
		// As kube's cacher: a bookmark shortly before the watch's deadline,
		// so the client restarts its watch from a recent revision.
		if at := time.Until(d) - preDeadlineBookmark; at > 0 {
			w.pre = time.NewTimer(at)
		}
	}
	sendInitial, initialEnd := opts.InitialEvents()

	c.mu.Lock()
	w.ring, w.epoch = c.ring, c.epoch
	switch {
	case sendInitial:
		w.initial = c.snap.Seek(prefix)
		w.initialEnd = initialEnd
		w.startRev, w.lastRev = c.rev, c.rev
		w.cursor = c.ring.nextSeq()
		w.floor = c.rev
	case rev == 0:
		w.lastRev, w.cursor = c.rev, c.ring.nextSeq()
		w.floor = c.rev
	case rev < c.ring.startRev:
		w.err = &storage.CompactedError{Requested: rev, Compacted: c.ring.startRev}
	case rev > c.rev:
		// Ahead of the cache: the changes after rev, when they come.
		w.lastRev, w.cursor, w.after = rev, c.ring.nextSeq(), rev
		w.floor = rev
	default:
		w.lastRev, w.cursor = rev, c.ring.seqAfter(rev)
		w.floor = rev
		if newest := c.ring.at(c.ring.nextSeq() - 1); newest != nil {
			w.floor = max(rev, newest.rev)
		}
	}
	c.mu.Unlock()
	c.m.watchers.Inc()
	return w, nil
}

// watcher is one open watch: a cursor into the cache's history, plus an
// iterator over a snapshot while it sends the initial events. It is used
// by one goroutine (the one calling Next); Close may come from any.
type watcher struct {
	c         *Cache
	prefix    string
	pred      storage.Predicate
	bookmarks bool

	// initial walks the start snapshot; nil once the initial events are
	// sent. initialEnd asks for the InitialEventsEnd bookmark at startRev.
	initial    *iterator
	initialEnd bool
	// ahead is the next initial object when aheadValid: Buffered looks
	// one object ahead so the server knows when a burst ends.
	ahead      *entry
	aheadValid bool
	startRev   int64

	// ring is the history this watcher reads; cursor is the seq of the
	// next event to read in it. lastRev is the revision the client has
	// seen everything up to. slowAt, when non-zero, is the cursor at which
	// the watcher stops because it lagged too far. Read and written only
	// by Next, under c.mu held for reading (the ring is shared).
	ring    *ring
	cursor  uint64
	lastRev int64
	// after, when not 0, is a revision the watch began ahead of the
	// cache at: events at or before it are not sent.
	after int64
	// floor is the revision the watch began at, as kube's cacher counts
	// it: the revision asked for or, when later, that of the newest event
	// in the history then (which kube's watcher replays first), or the
	// cache's revision for a watch from now or with initial events.
	// Bookmarks wait until the cache has passed it: kube's watcher drops
	// a bookmark whose resourceVersion is not above it.
	floor  int64
	epoch  uint64
	slowAt uint64
	// pre fires preDeadlineBookmark before the watch's deadline (nil
	// without bookmarks or a deadline); preDue is set when it has fired
	// and the bookmark it asks for is not sent yet.
	pre    *time.Timer
	preDue bool
	// err, once set, is returned by every Next.
	err error

	closeOnce sync.Once
	closed    chan struct{}
}

// Next returns the next event, blocking until there is one.
func (w *watcher) Next(ctx context.Context) (storage.WatchEvent, error) {
	if w.err != nil {
		return storage.WatchEvent{}, w.err
	}
	select {
	case <-w.closed:
		return storage.WatchEvent{}, storage.ErrWatchClosed
	default:
	}
	if w.initial != nil {
		if ev, ok := w.nextInitial(); ok {
			return ev, nil
		}
	}
	var pre <-chan time.Time
	if w.pre != nil {
		pre = w.pre.C
	}
	for {
		ev, ok, wait := w.nextFromHistory()
		if w.err != nil {
			return storage.WatchEvent{}, w.err
		}
		if ok {
			return ev, nil
		}
		select {
		case <-pre:
			w.preDue, pre = true, nil
		case <-wait:
		case <-ctx.Done():
			return storage.WatchEvent{}, ctx.Err()
		case <-w.closed:
			return storage.WatchEvent{}, storage.ErrWatchClosed
		}
	}
}

// nextInitial returns the next initial event: a matching object of the
// start snapshot, then the end bookmark if asked for.
func (w *watcher) nextInitial() (storage.WatchEvent, bool) {
	e := w.ahead
	if !w.aheadValid {
		e = w.advanceInitial()
	}
	w.ahead, w.aheadValid = nil, false
	if e != nil {
		return storage.WatchEvent{Type: wire.Added, Object: e.value, Revision: e.rev, ObjectAlt: &e.alt}, true
	}
	w.initial = nil
	if w.initialEnd {
		return storage.WatchEvent{Type: wire.Bookmark, Revision: w.startRev, InitialEventsEnd: true}, true
	}
	return storage.WatchEvent{}, false
}

// advanceInitial moves the snapshot iterator to the next matching object
// under the watch's prefix, or returns nil at the end.
func (w *watcher) advanceInitial() *entry {
	for e := w.initial.Next(); e != nil && strings.HasPrefix(e.key, w.prefix); e = w.initial.Next() {
		if e.matches(w.pred) {
			return e
		}
	}
	return nil
}

// Buffered reports whether Next would return at once because initial
// events (or their end bookmark) remain; it looks one object ahead. Only
// the goroutine calling Next may call it.
func (w *watcher) Buffered() bool {
	if w.initial == nil {
		return false
	}
	if !w.aheadValid {
		w.ahead, w.aheadValid = w.advanceInitial(), true
	}
	return w.ahead != nil || w.initialEnd
}

var _ storage.Buffered = (*watcher)(nil)

// nextFromHistory returns the next event for this watcher from the
// history, or ok=false and a channel that is closed when there may be
// one. It sets w.err when the watch must end.
func (w *watcher) nextFromHistory() (ev storage.WatchEvent, ok bool, wait <-chan struct{}) {
	c := w.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	r := w.ring
	for {
		if w.cursor < r.base {
			// The history dropped events this watcher had not read.
			w.tooSlowLocked()
			return ev, false, nil
		}
		if lag := r.nextSeq() - w.cursor; w.slowAt == 0 && lag > uint64(c.cfg.WatcherBuffer) {
			w.slowAt = w.cursor + uint64(c.cfg.WatcherBuffer)
		}
		if w.slowAt != 0 && w.cursor >= w.slowAt {
			w.tooSlowLocked()
			return ev, false, nil
		}
		e := r.at(w.cursor)
		if e == nil {
			break
		}
		w.cursor++
		if !strings.HasPrefix(e.key(), w.prefix) || e.rev <= w.after {
			continue
		}
		old := e.prev != nil && e.prev.matches(w.pred)
		now := e.cur != nil && e.cur.matches(w.pred)
		typ, obj, line, objAlt, lineAlt, send := e.render(old, now, r.recent(e.seq))
		w.lastRev = max(w.lastRev, e.rev)
		if send {
			c.m.dispatched.Inc()
			return storage.WatchEvent{Type: typ, Object: obj, Revision: e.rev, Frame: line,
				ObjectAlt: objAlt, FrameAlt: lineAlt}, true, nil
		}
	}
	// Caught up with this ring.
	switch {
	case r != c.ring:
		w.err = ErrRelisted
		return ev, false, nil
	case c.stopped:
		w.err = ErrStopped
		return ev, false, nil
	}
	if w.bookmarks && (w.epoch != c.epoch || w.preDue) {
		// A bookmark is due: sent if the cache has passed the watch's
		// floor, else dropped until the next one is due, as kube's
		// watcher drops it.
		w.epoch, w.preDue = c.epoch, false
		if c.rev > w.floor {
			w.lastRev = max(w.lastRev, c.rev)
			return storage.WatchEvent{Type: wire.Bookmark, Revision: w.lastRev}, true, nil
		}
	}
	return ev, false, c.notify
}

func (w *watcher) tooSlowLocked() {
	w.err = ErrWatcherTooSlow
	w.c.m.slowClosed.Inc()
	w.c.log.Info("watch cache closed a slow watcher", "prefix", w.prefix, "lastRevision", w.lastRev)
}

// Close ends the watch; Next then returns storage.ErrWatchClosed.
func (w *watcher) Close() {
	w.closeOnce.Do(func() {
		close(w.closed)
		if w.pre != nil {
			w.pre.Stop()
		}
		w.c.m.watchers.Dec()
	})
}
