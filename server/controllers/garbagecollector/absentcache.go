package garbagecollector

import (
	"container/list"
	"sync"
)

// absentOwnerCacheSize bounds the cache, as kube's 500.
const absentOwnerCacheSize = 500

// referenceCache remembers owners the server said do not exist (not found,
// or another uid under the name), so that the dependents of one deleted
// owner cost one GET, not one each. It is an LRU; safe for concurrent use.
type referenceCache struct {
	mu    sync.Mutex
	max   int
	order *list.List                        // of objectReference, most recent first; guarded by mu
	items map[objectReference]*list.Element // guarded by mu
}

func newReferenceCache(max int) *referenceCache {
	return &referenceCache{max: max, order: list.New(), items: map[objectReference]*list.Element{}}
}

func (c *referenceCache) add(r objectReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[r]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[r] = c.order.PushFront(r)
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(objectReference))
	}
}

func (c *referenceCache) has(r objectReference) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[r]
	if ok {
		c.order.MoveToFront(e)
	}
	return ok
}
