// Package direct serves LIST and WATCH with Kubernetes' resourceVersion
// semantics straight from a storage.Interface, without a cache.
//
// A Reader is a storage.ListWatcher: every LIST is one or more range
// reads of the store and every WATCH is one store watch. It is what the
// server uses when the watch cache is off, and the oracle the cache is
// tested against.
//
// # LIST
//
// The resourceVersion modes map to store reads as in kube-apiserver's
// etcd storage:
//
//   - "" (unset): a consistent (linearizable) read of the latest state;
//   - "0": the latest state (there is nothing staler to serve);
//   - N with NotOlderThan, or N with no match and no limit: the latest
//     state, which must be at least N, else ErrTooLargeResourceVersion;
//   - N with Exact, or N with no match and a limit: the state at N, or a
//     *storage.CompactedError when N is compacted.
//
// A continue token carries the first page's revision and the key after
// the last key read; later pages are read at that revision, so a paged
// list is one snapshot. Limit is always honoured. With a selector, the
// reader keeps reading until Limit items match or the range ends, and
// then remainingItemCount is unknown and left out.
//
// # WATCH
//
// Without a resourceVersion ("" or "0") a watch first sends the current
// state as ADDED events, read at some revision R, then the changes after
// R. With N it sends the changes after N. With sendInitialEvents it sends
// the state at R >= N as ADDED events, then a BOOKMARK marking the end of
// the initial events at R, then the changes after R.
//
// Its store watch asks for previous values (storage.WithPrevValues): a
// DELETED event carries the deleted object, and a selector needs the old
// value to see an object stop matching. (The watch cache keeps its own
// previous state and does not ask.)
//
// A selector turns the store's events into what a client of that
// selector must see: an update into MODIFIED while the object matches,
// ADDED when it starts matching, DELETED (carrying the new value) when it
// stops. With AllowBookmarks the store's progress notifications become
// BOOKMARK events. The store sends those on its own only rarely (etcd:
// every --watch-progress-notify-interval, 10 minutes by default), so a
// server runs Reader.Run, which asks for progress once per bookmark
// interval while such watches are open. RequestProgress reaches only the
// watches on the same etcd gRPC stream, which clientv3 picks by the
// context's metadata: request it through the same storage.Interface, not
// through a bare clientv3 client.
package direct
