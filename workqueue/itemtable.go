package workqueue

// itemTable maps items to their state: an open-addressing hash table with
// linear probing, keyed by a hash the queue computes once per call (the
// same hash also picks the shard). It is not safe for concurrent use; its
// shard's mutex guards it.
//
// Why not a Go map: the map would hash the item a second time, and its
// slots (control word and key in different cache lines) cost two cache
// misses per lookup. Here a slot holds the hash tag, the flags and the
// item, so a lookup of an item already present, the queue's most common
// operation, usually touches one cache line and compares the item once.
//
// Invariants: len(slots) is a power of two (or zero); a slot is empty iff
// its flags are zero (every stored item is dirty or processing); an item
// sits at the first slot at or after home(tag) (cyclically) with no empty
// slot in between, which backward-shift deletion preserves; used is the
// number of non-empty slots and stays at most 3/4 of len(slots).
type itemTable[T comparable] struct {
	slots []itemSlot[T]
	used  int
}

type itemSlot[T comparable] struct {
	tag   uint32 // high bits of the item's hash
	flags uint8  // itemState flags; 0: empty slot
	item  T
}

// tagOf keeps the hash bits the shard index does not use.
func tagOf(h uint64) uint32 { return uint32(h >> 32) }

func (t *itemTable[T]) mask() int { return len(t.slots) - 1 }

// find returns the slot index of item, or -1.
func (t *itemTable[T]) find(tag uint32, item T) int {
	if len(t.slots) == 0 {
		return -1
	}
	m := t.mask()
	for i := int(tag) & m; ; i = (i + 1) & m {
		s := &t.slots[i]
		if s.flags == 0 {
			return -1
		}
		if s.tag == tag && s.item == item {
			return i
		}
	}
}

// insert stores item, which must be absent, with flags (non-zero).
func (t *itemTable[T]) insert(tag uint32, item T, flags uint8) {
	if (t.used+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	m := t.mask()
	i := int(tag) & m
	for t.slots[i].flags != 0 {
		i = (i + 1) & m
	}
	t.slots[i] = itemSlot[T]{tag: tag, flags: flags, item: item}
	t.used++
}

// remove empties slot i and shifts later members of its probe run back,
// so lookups never need tombstones.
func (t *itemTable[T]) remove(i int) {
	m := t.mask()
	for j := (i + 1) & m; t.slots[j].flags != 0; j = (j + 1) & m {
		home := int(t.slots[j].tag) & m
		// Move j into the hole at i unless j's home lies cyclically in
		// (i, j]: then j is already as close to home as it may be.
		if (j-home)&m >= (j-i)&m {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = itemSlot[T]{}
	t.used--
}

func (t *itemTable[T]) grow() {
	old := t.slots
	t.slots = make([]itemSlot[T], max(2*len(old), 16))
	t.used = 0
	for _, s := range old {
		if s.flags != 0 {
			t.insert(s.tag, s.item, s.flags)
		}
	}
}

// keepProcessing drops every item that is not being processed, and clears
// the other flags of those that are (the queue is shutting down).
func (t *itemTable[T]) keepProcessing() {
	old := t.slots
	t.slots, t.used = nil, 0
	for _, s := range old {
		if s.flags&flagProcessing != 0 {
			t.insert(s.tag, s.item, flagProcessing)
		}
	}
}
