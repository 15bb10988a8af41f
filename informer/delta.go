package informer

import "github.com/listwatch/listwatch/object"

// DeltaType says what happened to an object.
type DeltaType string

const (
	// Added: a watch ADDED event.
	Added DeltaType = "Added"
	// Updated: a watch MODIFIED event.
	Updated DeltaType = "Updated"
	// Deleted: a watch DELETED event, or an object missing from a relist
	// (then Delta.FinalStateUnknown is set).
	Deleted DeltaType = "Deleted"
	// Replaced: the object was in a (re)list.
	Replaced DeltaType = "Replaced"
	// Sync: a periodic resync of an object already in the store.
	Sync DeltaType = "Sync"
)

// Delta is one change to one object.
type Delta[T object.Object] struct {
	Type   DeltaType
	Object T
	// FinalStateUnknown is set on a Deleted delta produced by Replace: the
	// object vanished while the watch was down, Object is the last state
	// the client knew, and the object's final state was never observed.
	FinalStateUnknown bool
}

// Deltas are one key's pending changes, oldest first. Never empty when
// handed out by DeltaQueue.
type Deltas[T object.Object] []Delta[T]

// Newest returns the most recent delta, and false if there is none.
func (d Deltas[T]) Newest() (Delta[T], bool) {
	if len(d) == 0 {
		return Delta[T]{}, false
	}
	return d[len(d)-1], true
}

// dedupDeletes collapses two trailing Deleted deltas into one: deleting
// twice says nothing new. The one with a known final state wins.
func dedupDeletes[T object.Object](d Deltas[T]) Deltas[T] {
	n := len(d)
	if n < 2 {
		return d
	}
	a, b := d[n-2], d[n-1]
	if a.Type != Deleted || b.Type != Deleted {
		return d
	}
	if b.FinalStateUnknown && !a.FinalStateUnknown {
		b = a
	}
	d[n-2] = b
	var zero Delta[T]
	d[n-1] = zero
	return d[:n-1]
}
