package workqueue

import (
	"hash/maphash"
	"sync"
)

// numShards splits the per-item state so that adds of different items, and
// deduplicated adds above all, do not contend on one lock. A power of two.
const numShards = 64

// shard holds the state of the items that hash to it.
type shard[T comparable] struct {
	mu sync.Mutex
	// items holds every dirty or processing item of the shard; an item that
	// is neither is absent. Guarded by mu.
	items itemTable[T]
	_     [24]byte // keep neighbouring shards' locks off one cache line
}

// Item state flags.
const (
	flagDirty      uint8 = 1 << iota // waiting to be handed out (again)
	flagProcessing                   // handed out by Get, not yet Done
	flagLow                          // the pending hand-out is low priority
)

// An item's flags in its shard's table say what the queue knows about it.
//
// Invariants, under the shard lock: an item that is dirty and not
// processing has exactly one entry in a fifo (or is being handed out by a
// Get that popped it and has yet to mark it processing); an item that is
// processing has none.

type shards[T comparable] struct {
	seed maphash.Seed
	s    [numShards]shard[T]
}

func (s *shards[T]) init() { s.seed = maphash.MakeSeed() }

// of returns item's shard and its tag in the shard's table: one hash of
// the item serves both.
func (s *shards[T]) of(item T) (*shard[T], uint32) {
	var h uint64
	// Keys are nearly always strings; maphash.String is several times
	// cheaper than the generic maphash.Comparable.
	if k, ok := any(item).(string); ok {
		h = maphash.String(s.seed, k)
	} else {
		h = maphash.Comparable(s.seed, item)
	}
	return &s.s[h&(numShards-1)], tagOf(h)
}
