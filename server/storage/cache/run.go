package cache

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/listwatch/listwatch/internal/backoff"
	"github.com/listwatch/listwatch/server/storage"
)

// listPageSize is the page size of the cache's own lists of storage.
const listPageSize = 10000

// Run lists the prefix, then follows storage's watch, keeping the state
// and the history. A watch that fails is resumed from the last revision
// seen; one that hits a compacted revision makes the cache re-list, which
// ends the open watches with ErrRelisted so their clients resume (and,
// being older than the new history, re-list too). Run blocks until ctx
// ends and returns after its goroutines exit.
func (c *Cache) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { c.tick(ctx) })
	defer func() {
		wg.Wait()
		c.mu.Lock()
		c.stopped = true
		c.holdValues(-c.valueBytes)
		c.broadcastLocked()
		c.mu.Unlock()
		c.m.forget()
	}()

	// Retries of storage: 50ms doubling to 5s; a watch that lasted 10s
	// starts the delays over.
	retry := backoff.Exponential{Initial: 50 * time.Millisecond, Max: 5 * time.Second, ResetAfter: 10 * time.Second}
	needList := true
	for ctx.Err() == nil {
		if needList {
			if err := c.relist(ctx); err != nil {
				c.log.Warn("watch cache list failed", "err", err)
				_ = backoff.Sleep(ctx, retry.Next(0))
				continue
			}
			needList = false
			retry.Reset()
		}
		started := time.Now()
		err := c.follow(ctx)
		ran := time.Since(started)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, storage.ErrCompacted):
			c.log.Info("watch cache fell behind compaction; re-listing", "err", err)
			needList = true
		default:
			c.log.Warn("watch cache watch ended; resuming", "err", err)
			_ = backoff.Sleep(ctx, retry.Next(ran))
		}
	}
	return nil
}

// relist reads the whole prefix at one revision and installs it as the
// new state with an empty history starting there.
func (c *Cache) relist(ctx context.Context) error {
	var entries []*entry
	var rev, held int64
	start := ""
	for {
		res, err := c.cfg.Store.List(ctx, c.cfg.Prefix, storage.ListOptions{Revision: rev, Limit: listPageSize, StartKey: start})
		if err != nil {
			return err
		}
		rev = res.Revision
		for _, kv := range res.Items {
			entries = append(entries, newEntry(kv, c.cfg.Attrs))
			held += int64(len(kv.Value))
		}
		if !res.More || len(res.Items) == 0 {
			break
		}
		start = res.Items[len(res.Items)-1].Key + "\x00"
	}
	snap := buildSorted(entries)

	c.mu.Lock()
	defer c.mu.Unlock()
	var next uint64
	if c.ring != nil {
		next = c.ring.nextSeq()
	}
	c.snap, c.rev = snap, rev
	c.holdValues(held - c.valueBytes)
	c.ring = newRing(c.cfg.HistorySize, rev, snap, next, c.cfg.WatcherBuffer)
	c.lastEventRev, c.keysAtLastRev = 0, nil
	if !c.ready {
		c.ready = true
		close(c.readyCh)
	}
	c.broadcastLocked()
	c.m.objects.Set(float64(snap.Len()))
	c.m.revision.Set(float64(rev))
	c.log.Debug("watch cache listed", "objects", snap.Len(), "revision", rev)
	return nil
}

// follow applies storage's watch events until the watch fails.
func (c *Cache) follow(ctx context.Context) error {
	c.mu.RLock()
	from, skip := c.rev, []string(nil)
	if c.lastEventRev == c.rev && c.rev > 0 {
		// The last revision may be a transaction we saw only part of:
		// watch it again and skip the keys already applied.
		from, skip = c.rev-1, slices.Clone(c.keysAtLastRev)
	}
	c.mu.RUnlock()

	// No storage.WithPrevValues: apply takes an object's previous state
	// from the cache's own tree, so etcd need not send it.
	w, err := c.cfg.Store.Watch(c.watchStream(ctx), c.cfg.Prefix, from, true)
	if err != nil {
		return err
	}
	defer w.Close()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return err
		}
		if ev.Type != storage.EventProgress && ev.Revision == from+1 && skip != nil && slices.Contains(skip, ev.KV.Key) {
			continue
		}
		c.apply(ev)
	}
}

// apply adds one storage event to the state and the history.
func (c *Cache) apply(ev storage.Event) {
	c.m.received.Inc()
	var cur *entry
	if ev.Type == storage.EventPut {
		// Decode outside the lock: it is the only costly step.
		cur = newEntry(ev.KV, c.cfg.Attrs)
	}
	now := time.Now()

	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Revision < c.rev {
		return
	}
	switch ev.Type {
	case storage.EventProgress:
		if ev.Revision == c.rev {
			return
		}
	case storage.EventPut, storage.EventDelete:
		key := ev.KV.Key
		prev := c.snap.Get(key)
		if ev.Type == storage.EventPut {
			c.snap = c.snap.Put(key, cur)
			c.holdValues(int64(len(cur.value)))
		} else if prev != nil {
			c.snap = c.snap.Delete(key)
		} else {
			c.log.Warn("watch cache: delete of a key it does not hold", "key", key, "revision", ev.Revision)
			break
		}
		if prev != nil {
			c.holdValues(-int64(len(prev.value)))
		}
		c.ring.push(&event{rev: ev.Revision, cur: cur, prev: prev, at: mono(now)}, c.snap, c.cfg.HistorySize)
		if c.lastEventRev != ev.Revision {
			c.lastEventRev, c.keysAtLastRev = ev.Revision, c.keysAtLastRev[:0]
		}
		c.keysAtLastRev = append(c.keysAtLastRev, key)
		c.m.objects.Set(float64(c.snap.Len()))
	}
	c.rev = ev.Revision
	c.evictLocked(now)
	c.m.revision.Set(float64(c.rev))
	c.broadcastLocked()
}

// evictLocked drops events older than HistoryAge, all at once (a
// minute's tick may find a whole fill of them), but the newest HistoryMin.
func (c *Cache) evictLocked(now time.Time) {
	r, t := c.ring, mono(now)
	k := sort.Search(r.n, func(i int) bool { return time.Duration(t-r.buf[(r.head+i)%len(r.buf)].at) <= c.cfg.HistoryAge })
	r.drop(min(k, r.n-c.cfg.HistoryMin))
}

// tick drives bookmarks and age-based eviction for an idle history.
func (c *Cache) tick(ctx context.Context) {
	t := time.NewTicker(c.cfg.BookmarkInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c.mu.Lock()
			if c.ring != nil {
				c.evictLocked(now)
			}
			c.epoch++
			c.broadcastLocked()
			c.mu.Unlock()
		}
	}
}

// buildSorted builds a tree from entries in ascending key order in O(n),
// the way a Cartesian tree is built: a stack holds the right spine.
func buildSorted(es []*entry) tree {
	stack := make([]*node, 0, 64)
	for _, e := range es {
		n := &node{key: e.key, e: e, prio: priority(e.key)}
		var last *node
		for len(stack) > 0 && stack[len(stack)-1].prio < n.prio {
			last = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		n.left = last
		if len(stack) > 0 {
			stack[len(stack)-1].right = n
		}
		stack = append(stack, n)
	}
	if len(stack) == 0 {
		return tree{}
	}
	fixSizes(stack[0])
	return tree{root: stack[0]}
}

func fixSizes(n *node) int {
	if n == nil {
		return 0
	}
	n.size = 1 + fixSizes(n.left) + fixSizes(n.right)
	return n.size
}
