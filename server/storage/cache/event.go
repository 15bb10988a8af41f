package cache

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// event is one change in the ring. It is immutable after append except
// for its snapshot, which the ring drops when a newer event arrives unless
// the event is a checkpoint, and its frames, which are built at most once
// each while the event is among the ring's newest and dropped after.
type event struct {
	seq uint64 // position in the ring's history, dense and increasing
	rev int64
	// cur is the new entry of a put, nil for a delete.
	cur *entry
	// prev is the entry before the change, nil for a create.
	prev *entry
	// snap is the state right after this event, when held (see
	// checkpointEvery); the ring's lock guards both.
	snap tree
	held bool
	// at is when the cache applied it, on the monotonic clock (mono).
	at int64

	frames atomic.Pointer[eventFrames] // built on first use
}

// An event is 64 bytes: the history holds up to 102,400 of them. Its key
// is its entries', its time a number, its frames allocated when first
// kept.

// eventFrames are an event's frames, indexed by frameAdded etc.
type eventFrames [3]atomic.Pointer[frame]

// key returns the key the event changed.
func (ev *event) key() string {
	if ev.cur != nil {
		return ev.cur.key
	}
	return ev.prev.key
}

// monoBase is the origin of mono.
var monoBase = time.Now()

// mono returns t on the process's monotonic clock, in nanoseconds.
func mono(t time.Time) int64 { return int64(t.Sub(monoBase)) }

// applyTo returns t with this event's change made.
func (ev *event) applyTo(t tree) tree {
	if ev.cur != nil {
		return t.Put(ev.cur.key, ev.cur)
	}
	return t.Delete(ev.prev.key)
}

// releaseFrames drops the event's frames; watchers that hold their bytes
// keep them.
func (ev *event) releaseFrames() {
	ev.frames.Store(nil)
}

// frame is one encoded watch line, built once whatever the number of
// watchers that send it.
type frame struct {
	once sync.Once
	obj  []byte
	line []byte
	// objAlt is obj's other encoding when obj is not an entry's value
	// (a DELETED event's object at the delete's revision); lineAlt is
	// the frame's.
	objAlt, lineAlt storage.Memo
}

const (
	frameAdded = iota
	frameModified
	frameDeleted
)

// render returns what a watcher sends for this event given whether the
// watcher's predicate matched before (old) and after (now) the change, or
// ok=false if it sends nothing. keep says whether a frame built now is
// kept on the event for other watchers (see frameWindow). The choice follows kube-apiserver: a
// delete or a stop-matching update sends DELETED with the previous value
// at this event's revision; a start-matching update sends ADDED.
func (ev *event) render(old, now, keep bool) (typ wire.EventType, obj, line []byte, objAlt, lineAlt *storage.Memo, ok bool) {
	var i int
	switch {
	case now && old:
		typ, i = wire.Modified, frameModified
	case now:
		typ, i = wire.Added, frameAdded
	case old:
		typ, i = wire.Deleted, frameDeleted
	default:
		return "", nil, nil, nil, nil, false
	}
	var f *frame
	fs := ev.frames.Load()
	if fs == nil && keep {
		if fs = new(eventFrames); !ev.frames.CompareAndSwap(nil, fs) {
			fs = ev.frames.Load()
		}
	}
	if fs != nil {
		f = fs[i].Load()
	}
	if f == nil {
		f = new(frame)
		if keep && fs != nil && !fs[i].CompareAndSwap(nil, f) {
			f = fs[i].Load()
		}
	}
	f.once.Do(func() {
		if i == frameDeleted {
			f.obj = withRevision(ev.prev.value, ev.rev)
		} else {
			f.obj = ev.cur.value
		}
		f.line = wire.EventLine(typ, f.obj)
	})
	objAlt = &f.objAlt
	if i != frameDeleted {
		objAlt = &ev.cur.alt
	}
	return typ, f.obj, f.line, objAlt, &f.lineAlt, true
}
