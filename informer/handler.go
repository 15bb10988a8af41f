package informer

import (
	"time"

	"github.com/listwatch/listwatch/object"
)

// Handler is told about every change to the informer's store, in order,
// one call at a time, on a goroutine of its own. Objects are shared with
// the store and every other handler: never mutate them.
type Handler[T object.Object] interface {
	// OnAdd: obj appeared. isInInitialList is true for objects delivered
	// as part of the state the handler starts from (the first list, or the
	// store's content when the handler was added late).
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate: obj changed, or (with old == new's resourceVersion) a
	// periodic resync re-delivers it.
	OnUpdate(old, new T)
	// OnDelete: obj is gone. obj is its final state, or, when
	// finalStateUnknown, the last state the client knew: it vanished
	// while the watch was down and the deletion was seen in a relist.
	OnDelete(obj T, finalStateUnknown bool)
}

// HandlerFuncs adapts functions to a Handler; nil functions ignore the call.
type HandlerFuncs[T object.Object] struct {
	AddFunc    func(obj T, isInInitialList bool)
	UpdateFunc func(old, new T)
	DeleteFunc func(obj T, finalStateUnknown bool)
}

var _ Handler[*object.Unstructured] = HandlerFuncs[*object.Unstructured]{}

// OnAdd calls AddFunc.
func (f HandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc.
func (f HandlerFuncs[T]) OnUpdate(old, new T) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(old, new)
	}
}

// OnDelete calls DeleteFunc.
func (f HandlerFuncs[T]) OnDelete(obj T, finalStateUnknown bool) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(obj, finalStateUnknown)
	}
}

// HandlerOptions configure one handler registration.
type HandlerOptions struct {
	// ResyncPeriod: how often this handler gets OnUpdate(obj, obj) for
	// every object in the store; 0 never. Periods under MinResyncPeriod
	// are raised to it. The informer resyncs at the smallest period of its
	// handlers, so a handler's resyncs may lag its period by up to that.
	ResyncPeriod time.Duration
}

// MinResyncPeriod is the smallest resync period honoured.
const MinResyncPeriod = time.Second
