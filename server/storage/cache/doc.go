// Package cache is the watch cache: it serves LIST and WATCH for one
// resource prefix from memory, the way kube-apiserver's cacher does, so
// that readers cost etcd one watch per resource instead of one range read
// per request.
//
// # What it holds
//
// A Cache follows one progress-enabled storage watch on its prefix (on a
// watch stream of its own, storage.WithWatchStream, which its progress
// requests share, so that no other watch keeps etcd from answering them)
// and keeps two things, both guarded by one lock that only its Run goroutine
// writes under:
//
//   - the current objects, in an immutable ordered tree (a treap with path
//     copying): a snapshot is a pointer, a write copies O(log n) nodes, and
//     any snapshot can be paged at any key without a lock;
//   - a ring of recent events (bounded by HistorySize and HistoryAge, but
//     the newest HistoryMin stay whatever their age); the
//     newest and every 16th carry the snapshot right after them, and the
//     state after any other is that snapshot with at most 15 writes
//     replayed, so the state at any revision the ring still covers can be
//     listed exactly.
//
// Each object is decoded once, when it arrives, for its labels and
// selectable fields; selectors never decode values again. Pages reference
// the stored bytes (ListPage.Items share them), so a handler can stream a
// large LIST without copying it.
//
// # Reads
//
// GetList follows Kubernetes' resourceVersion rules: unset is a consistent
// read (wait until the cache has seen etcd's current revision, asking for
// a progress notification, else read etcd directly after
// FreshnessTimeout); "0" is whatever the cache holds; NotOlderThan waits
// for the revision; Exact, and every continued page, read the snapshot at
// the revision, or etcd when the history no longer covers it (etcd then
// answers 410 if it compacted it). Limit is always honoured, and continue
// tokens are storage.EncodeContinue's, so a page read from the cache and
// one read from etcd at the same revision continue each other.
//
// # Watches
//
// A watch is a cursor into the shared ring; its Next is called by the
// server's handler goroutine and there is no goroutine per watcher. Each
// event's wire frame ({"type":…,"object":…}\n) is built at most once per
// event type, whatever the number of watchers, while the event is among
// the ring's WatcherBuffer newest; a watcher further behind builds its own. Label
// and field selectors turn an update that stops matching into DELETED (the
// previous object at the new resourceVersion) and one that starts matching
// into ADDED.
// Watchers that allow bookmarks get one every BookmarkInterval, at the
// cache's latest revision, once they have read everything before it.
//
// # Caveats
//
//   - A watcher that lags more than WatcherBuffer events behind the ring's
//     head delivers what was in its window and then ends with
//     ErrWatcherTooSlow; its client resumes from the last resourceVersion.
//   - When the cache's own watch hits a compacted revision it re-lists and
//     starts a new history; the watches open then drain the old history and
//     end with ErrRelisted. Both errors wrap storage.ErrWatchClosed.
//   - Memory: every checkpoint in the ring pins the tree nodes copied by
//     the writes since the one before it (up to 16 paths of about 2·ln(n)
//     small nodes each); every event pins its entries and, while among the
//     WatcherBuffer newest, the frames built for it.
package cache
