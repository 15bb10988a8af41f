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
