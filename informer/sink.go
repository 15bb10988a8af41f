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

// ListPreparer is implemented by a Sink that takes a list page by page
// (see DeltaQueue.PrepareListed): the reflector hands it every page of a
// list, and every object of a streaming list, as it arrives, then the
// whole list to ReplacePrepared instead of Replace. A relist then holds
// each unchanged object once, and each changed one only as stored.
type ListPreparer[T object.Object] interface {
	PrepareListed(page []T) error
	ReplacePrepared(list []T, rv string) error
}

var _ ListPreparer[*object.Unstructured] = (*DeltaQueue[*object.Unstructured])(nil)
