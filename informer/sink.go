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

// EarlyLister is implemented by a Sink that can take its first list as it
// arrives, before the list is complete (see DeltaQueue.BeginEarlyList):
// the informer then stores and hands out the first objects while the
// rest are still being read and decoded. The reflector asks
// BeginEarlyList before a list; on yes it hands every part of that list
// to QueueListed and, once the list is complete, calls EndEarlyList
// instead of Replace. A list begun early that fails or restarts is
// finished by Replace (or ReplacePrepared), as any list is.
type EarlyLister[T object.Object] interface {
	BeginEarlyList() bool
	QueueListed(page []T) error
	EndEarlyList(rv string) error
}

var _ EarlyLister[*object.Unstructured] = (*DeltaQueue[*object.Unstructured])(nil)
