package workqueue

import (
	"container/heap"
	"time"
)

// delayHeap is a min-heap of items by ready time, with an index so a
// repeated AddAfter finds the item's waiting entry. The Queue's mutex
// guards it.
type delayHeap[T comparable] struct {
	entries []delayed[T]
	index   map[T]int // item -> position in entries
}

type delayed[T comparable] struct {
	item    T
	readyAt time.Time
}

// add records that item becomes ready at readyAt, keeping the earlier time
// if the item already waits. It reports whether the earliest ready time of
// the heap changed.
func (h *delayHeap[T]) add(item T, readyAt time.Time) (newHead bool) {
	if i, ok := h.index[item]; ok {
		if !readyAt.Before(h.entries[i].readyAt) {
			return false
		}
		h.entries[i].readyAt = readyAt
		heap.Fix(h, i)
		return h.index[item] == 0
	}
	heap.Push(h, delayed[T]{item: item, readyAt: readyAt})
	return h.index[item] == 0
}

// peek returns the earliest ready time; ok is false when the heap is empty.
func (h *delayHeap[T]) peek() (readyAt time.Time, ok bool) {
	if len(h.entries) == 0 {
		return time.Time{}, false
	}
	return h.entries[0].readyAt, true
}

// popReady removes and returns the earliest item if it is ready at now.
func (h *delayHeap[T]) popReady(now time.Time) (item T, ok bool) {
	if len(h.entries) == 0 || h.entries[0].readyAt.After(now) {
		return item, false
	}
	d := heap.Pop(h).(delayed[T])
	return d.item, true
}

func (h *delayHeap[T]) reset() {
	h.entries = nil
	clear(h.index)
}

// heap.Interface; not for direct use.

func (h *delayHeap[T]) Len() int { return len(h.entries) }

func (h *delayHeap[T]) Less(i, j int) bool {
	return h.entries[i].readyAt.Before(h.entries[j].readyAt)
}

func (h *delayHeap[T]) Swap(i, j int) {
	h.entries[i], h.entries[j] = h.entries[j], h.entries[i]
	h.index[h.entries[i].item] = i
	h.index[h.entries[j].item] = j
}

func (h *delayHeap[T]) Push(x any) {
	d := x.(delayed[T])
	h.index[d.item] = len(h.entries)
	h.entries = append(h.entries, d)
}

func (h *delayHeap[T]) Pop() any {
	n := len(h.entries) - 1
	d := h.entries[n]
	h.entries[n] = delayed[T]{}
	h.entries = h.entries[:n]
	delete(h.index, d.item)
	return d
}
