package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/trace"
)

// GetList serves one page of a LIST under prefix (the cache's prefix or a
// narrower one). Items reference the cache's value bytes: callers must not
// modify them.
func (c *Cache) GetList(ctx context.Context, prefix string, opts storage.GetListOptions) (storage.ListPage, error) {
	if err := c.checkPrefix(prefix); err != nil {
		return storage.ListPage{}, err
	}
	tr := trace.FromContext(ctx)
	pos, err := opts.Position(prefix)
	if err != nil {
		return storage.ListPage{}, err
	}
	start, rev := pos.Start, pos.Revision

	switch pos.Mode {
	case storage.ReadMostRecent:
		cur, err := c.cfg.Store.CurrentRevision(ctx)
		if err != nil {
			return storage.ListPage{}, err
		}
		tr.Step("cache: got current revision")
		if !c.waitFresh(ctx, cur) {
			tr.Step("cache: not fresh in time, reading storage")
			c.m.fallbacks.Inc()
			return c.listStore(ctx, prefix, cur, start, opts)
		}
		tr.Step("cache: fresh")
		snap, at, _, _ := c.state()
		return c.page(snap, at, prefix, start, opts)
	case storage.ReadAny:
		snap, at, ready, _ := c.state()
		if !ready {
			tr.Step("cache: not ready, reading storage")
			return c.listStore(ctx, prefix, 0, start, opts)
		}
		return c.page(snap, at, prefix, start, opts)
	case storage.ReadNotOlderThan:
		if !c.waitFor(ctx, rev, c.cfg.FreshnessTimeout, nil) {
			return storage.ListPage{}, c.tooLarge(ctx, rev)
		}
		tr.Step("cache: reached revision")
		snap, at, _, _ := c.state()
		return c.page(snap, at, prefix, start, opts)
	case storage.ReadExact:
		return c.listExact(ctx, prefix, rev, start, opts)
	}
	return storage.ListPage{}, fmt.Errorf("cache: unknown read mode %v", pos.Mode)
}

// listExact serves the state at rev: from the history when it holds rev
// and storage has not compacted it, else from storage, which still has it
// unless compacted (then 410).
func (c *Cache) listExact(ctx context.Context, prefix string, rev int64, start string, opts storage.GetListOptions) (storage.ListPage, error) {
	if !c.waitFor(ctx, rev, c.cfg.FreshnessTimeout, nil) {
		if err := ctx.Err(); err != nil {
			return storage.ListPage{}, err
		}
		// The cache is behind; etcd has rev unless it is in the future
		// (a continue token issued while the cache lagged, say).
		trace.FromContext(ctx).Step("cache: revision not reached, reading storage")
		page, err := c.listStore(ctx, prefix, rev, start, opts)
		if errors.Is(err, storage.ErrFutureRevision) {
			return storage.ListPage{}, c.tooLarge(ctx, rev)
		}
		return page, err
	}
	// As kube's cacher, which drops its snapshots older than etcd's
	// compaction: a revision etcd has compacted is read from etcd (410)
	// even while the history still holds it.
	compacted := int64(0)
	if cr, ok := c.cfg.Store.(storage.CompactRevisioner); ok {
		compacted = cr.CompactRevision()
	}
	c.mu.RLock()
	held := c.ready && !c.stopped && rev >= c.ring.startRev && rev >= compacted
	var (
		snap   tree
		replay []*event
	)
	if held {
		snap, replay = c.ring.snapshotPlan(rev)
	}
	c.mu.RUnlock()
	snap = replayOnto(snap, replay)
	if !held {
		trace.FromContext(ctx).Step("cache: revision older than history, reading storage")
		return c.listStore(ctx, prefix, rev, start, opts)
	}
	trace.FromContext(ctx).Step("cache: snapshot found")
	return c.page(snap, rev, prefix, start, opts)
}

// waitFresh waits until the cache has seen rev, asking storage for
// progress notifications, and observes the wait.
func (c *Cache) waitFresh(ctx context.Context, rev int64) bool {
	if _, cur, ready, _ := c.state(); ready && cur >= rev {
		c.m.readWait.Observe(0)
		return true
	}
	began := time.Now()
	ok := c.waitFor(ctx, rev, c.cfg.FreshnessTimeout, func() { c.requestProgress(ctx) })
	c.m.readWait.Observe(time.Since(began).Seconds())
	return ok
}

// requestProgress asks storage for a progress notification on the
// cache's own watch stream (watchStream).
func (c *Cache) requestProgress(ctx context.Context) {
	if err := c.cfg.Store.RequestProgress(c.watchStream(ctx)); err != nil {
		c.log.Debug("watch cache: progress request failed", "err", err)
	}
}

// watchStream names the cache's watch stream in ctx: the cache's watch
// and its progress requests have a stream to themselves
// (storage.WithWatchStream), so that no other watch (another cache's
// just opened, or a client's catching up) keeps etcd from answering
// them.
func (c *Cache) watchStream(ctx context.Context) context.Context {
	return storage.WithWatchStream(ctx, "cache "+c.cfg.Prefix)
}

// tooLarge is the error of a wait for a revision that did not come:
// ctx's own error if it ended, else ErrTooLargeResourceVersion.
func (c *Cache) tooLarge(ctx context.Context, rev int64) error {
	// A deadline is the read's own time running out while it waited for
	// rev (a watch's timeoutSeconds): still a revision the store did not
	// reach, as kube's cacher reports it (its wait does not end with the
	// watch's timeout). A cancelled read is just that.
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	_, cur, _, _ := c.state()
	return &storage.TooLargeResourceVersionError{Requested: rev, Current: cur}
}

// page cuts one page out of snap, which is the state at rev.
func (c *Cache) page(snap tree, rev int64, prefix, start string, opts storage.GetListOptions) (storage.ListPage, error) {
	if start < prefix {
		start = prefix
	}
	// The keys in [start, end) are those with the prefix from start on:
	// counting them first (O(log n)) spares a prefix comparison per item,
	// which on an unpaged list of 100,000 was 7% of serve's CPU.
	end := prefixEnd(prefix)
	left := snap.CountRange(start, end)
	p := opts.Predicate
	capacity := int64(left)
	if opts.Limit > 0 {
		capacity = min(capacity, opts.Limit)
	}
	if !p.Empty() {
		capacity = min(capacity, 1024)
	}
	w := pageWalk{
		start: start, end: end, p: p, left: left, limit: math.MaxInt,
		out: storage.ListPage{Items: make([]storage.KV, 0, capacity), Revision: rev},
	}
	if opts.Limit > 0 {
		w.limit = int(opts.Limit)
	}
	w.walk(snap.root, false, false)
	out := w.out
	if w.left == 0 {
		return out, nil
	}
	var err error
	if out.Continue, err = storage.EncodeContinue(prefix, w.last+"\x00", rev); err != nil {
		return storage.ListPage{}, err
	}
	if p.Empty() {
		n := int64(w.left)
		out.RemainingItemCount = &n
	}
	return out, nil
}

// runMin and runMax bound the subtrees a page marks as runs (storage.Run):
// big enough that a run's memo (a list's compressed bytes, say) is worth
// keeping, small enough that a write, which drops the memo of the run it
// falls in, costs rebuilding little. At 100,000 random keys, runs hold
// 98% of an unpaged list's items and 75% of 500-item pages'. A runMin of
// 16 covered 93% of those pages, but made no difference a benchmark of
// pages could tell apart, and nests more memos inside each other.
const (
	runMin = 64
	runMax = 512
)

// pageWalk collects a page's entries in key order: those in [start, end)
// (end "" for no bound) matching p, until limit are taken or the range
// ends. Without a predicate, every whole subtree of runMin to runMax
// entries that the page takes is marked as a run.
type pageWalk struct {
	start, end string
	p          storage.Predicate
	limit      int    // entries to take at most
	left       int    // entries in the range not yet visited
	last       string // key of the last entry visited
	out        storage.ListPage
}

func (w *pageWalk) done() bool { return w.left == 0 || len(w.out.Items) == w.limit }

// walk visits n's subtree in order; lo (hi) says every key in it is known
// to be >= start (< end).
func (w *pageWalk) walk(n *node, lo, hi bool) {
	for n != nil && !w.done() {
		switch {
		case !lo && n.key < w.start:
			n = n.right
			continue
		case !hi && w.end != "" && n.key >= w.end:
			n = n.left
			continue
		}
		if lo && hi && n.size >= runMin && n.size <= runMax && w.p.Empty() && n.size <= w.limit-len(w.out.Items) {
			from := len(w.out.Items)
			w.all(n)
			w.out.Runs = append(w.out.Runs, storage.Run{Start: from, End: len(w.out.Items), Memo: n.runMemo()})
			return
		}
		// n is in the range: its left subtree lies below end, its right
		// one above start.
		w.walk(n.left, lo, true)
		if w.done() {
			return
		}
		w.visit(n.e)
		n, lo = n.right, true
	}
}

func (w *pageWalk) visit(e *entry) {
	w.left--
	w.last = e.key
	if e.matches(w.p) {
		w.out.Items = append(w.out.Items, e.kv())
	}
}

// all takes every entry of n's subtree.
func (w *pageWalk) all(n *node) {
	for ; n != nil; n = n.right {
		w.all(n.left)
		w.visit(n.e)
	}
}

// prefixEnd is the least key greater than every key with the prefix, ""
// if there is none.
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
