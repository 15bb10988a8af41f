package cache

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/listwatch/listwatch/server/storage"
)

// tree is an immutable ordered map from key to *entry: a treap with path
// copying. Every write returns a new tree and leaves the old one intact, so
// a snapshot is a copy of the root pointer (O(1)) and a write copies the
// O(log n) nodes on one search path. Readers iterate a snapshot without any
// lock while the writer builds the next one.
//
// A node's priority is a hash of its key, so the shape depends only on the
// set of keys, and rewriting a key's value never moves its node. Each node
// counts the nodes beneath it, which gives rank queries (how many keys lie
// in a range) for RemainingItemCount.
type tree struct {
	root *node
}

type node struct {
	key         string
	e           *entry
	left, right *node
	prio        uint64
	size        int // nodes in this subtree, itself included
	// run holds encodings of this subtree's items as one run (see
	// storage.Run), created by the first page that marks the subtree as
	// a run. A write copies the nodes on its path, and a copy starts
	// without one, so a memo never outlives the items it encodes.
	run atomic.Pointer[storage.RunMemo]
}

// clone returns a copy of n to modify, without n's run memo.
func (n *node) clone() *node {
	return &node{key: n.key, e: n.e, left: n.left, right: n.right, prio: n.prio, size: n.size}
}

// runMemo returns n's run memo, creating it on first use.
func (n *node) runMemo() *storage.RunMemo {
	if m := n.run.Load(); m != nil {
		return m
	}
	m := new(storage.RunMemo)
	if n.run.CompareAndSwap(nil, m) {
		return m
	}
	return n.run.Load()
}

var treeSeed = maphash.MakeSeed()

func priority(key string) uint64 { return maphash.String(treeSeed, key) }

func (n *node) count() int {
	if n == nil {
		return 0
	}
	return n.size
}

// fix recomputes size; n must be a node no snapshot shares yet.
func (n *node) fix() *node {
	n.size = 1 + n.left.count() + n.right.count()
	return n
}

// Len is the number of keys.
func (t tree) Len() int { return t.root.count() }

// Get returns the entry of key, or nil.
func (t tree) Get(key string) *entry {
	n := t.root
	for n != nil {
		switch {
		case key < n.key:
			n = n.left
		case key > n.key:
			n = n.right
		default:
			return n.e
		}
	}
	return nil
}

// Put returns a tree with key set to e.
func (t tree) Put(key string, e *entry) tree {
	return tree{root: insert(t.root, key, e, priority(key))}
}

// Delete returns a tree without key (t itself if key is absent).
func (t tree) Delete(key string) tree {
	if t.Get(key) == nil {
		return t
	}
	return tree{root: remove(t.root, key)}
}

// insert returns a fresh copy of the search path with key set. Nodes it
// returns are new, so rotating them in place is safe.
func insert(n *node, key string, e *entry, prio uint64) *node {
	if n == nil {
		return &node{key: key, e: e, prio: prio, size: 1}
	}
	c := n.clone()
	switch {
	case key < n.key:
		c.left = insert(n.left, key, e, prio)
		if c.left.prio > c.prio {
			return rotateRight(c)
		}
	case key > n.key:
		c.right = insert(n.right, key, e, prio)
		if c.right.prio > c.prio {
			return rotateLeft(c)
		}
	default:
		c.e = e
		return c
	}
	return c.fix()
}

// rotateRight lifts n.left; both n and n.left must be fresh copies.
func rotateRight(n *node) *node {
	l := n.left
	n.left = l.right
	l.right = n.fix()
	return l.fix()
}

// rotateLeft lifts n.right; both n and n.right must be fresh copies.
func rotateLeft(n *node) *node {
	r := n.right
	n.right = r.left
	r.left = n.fix()
	return r.fix()
}

// remove returns a copy of the search path without key, which must exist.
func remove(n *node, key string) *node {
	c := n.clone()
	switch {
	case key < n.key:
		c.left = remove(n.left, key)
	case key > n.key:
		c.right = remove(n.right, key)
	default:
		return merge(n.left, n.right)
	}
	return c.fix()
}

// merge joins two treaps whose keys are all ordered a < b, copying the
// spine it walks.
func merge(a, b *node) *node {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		c := a.clone()
		c.right = merge(a.right, b)
		return c.fix()
	default:
		c := b.clone()
		c.left = merge(a, b.left)
		return c.fix()
	}
}

// Rank counts the keys less than key.
func (t tree) Rank(key string) int {
	r := 0
	n := t.root
	for n != nil {
		if key <= n.key {
			n = n.left
		} else {
			r += 1 + n.left.count()
			n = n.right
		}
	}
	return r
}

// CountRange counts the keys in [from, to); to == "" means no upper bound.
func (t tree) CountRange(from, to string) int {
	hi := t.Len()
	if to != "" {
		hi = t.Rank(to)
	}
	return max(hi-t.Rank(from), 0)
}

// iterator walks keys in ascending order from a start key. It holds the
// path of nodes still to visit, so it needs no lock and no parent links.
type iterator struct {
	stack []*node
}

// Seek returns an iterator positioned at the first key >= from.
func (t tree) Seek(from string) *iterator {
	it := &iterator{stack: make([]*node, 0, 48)}
	n := t.root
	for n != nil {
		if from <= n.key {
			it.stack = append(it.stack, n)
			n = n.left
		} else {
			n = n.right
		}
	}
	return it
}

// Next returns the next entry, or nil at the end.
func (it *iterator) Next() *entry {
	if len(it.stack) == 0 {
		return nil
	}
	n := it.stack[len(it.stack)-1]
	it.stack = it.stack[:len(it.stack)-1]
	for c := n.right; c != nil; c = c.left {
		it.stack = append(it.stack, c)
	}
	return n.e
}
