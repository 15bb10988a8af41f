package informer

import "github.com/listwatch/listwatch/object"

// Sink receives what a Reflector observes. *DeltaQueue satisfies it.
type Sink[T object.Object] interface {
	Add(obj T) error
	Update(obj T) error
	Delete(obj T) error
	// Replace states the complete set of objects at resourceVersion rv.
	Replace(list []T, rv string) error
	// Resync asks for a Sync of everything already known.
	Resync() error
}

var _ Sink[*object.Unstructured] = (*DeltaQueue[*object.Unstructured])(nil)

// Reuser is implemented by a Sink that can hand back its own copy of
// listed objects that have not changed (see DeltaQueue.ReuseUnchanged).
// The reflector calls it on every page of a list, and on every object of
// a streaming list, so unchanged objects are not held twice during a
// relist.
type Reuser[T object.Object] interface {
	ReuseUnchanged(listed []T) int
}

var _ Reuser[*object.Unstructured] = (*DeltaQueue[*object.Unstructured])(nil)
