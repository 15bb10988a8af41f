package storage

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Memo holds a second encoding of a value the watch cache keeps (the
// server's protobuf bytes of an object, or of a watch frame): built at
// most once, by the first reader that asks (readers asking meanwhile wait
// for it), then shared by every request and watcher that sends it.
// Readers without a cache hand out nil Memos, and a nil Memo builds on
// every call. An unbuilt Memo is one pointer: every cached object holds
// one, and most are never asked for.
type Memo struct {
	s atomic.Pointer[memoState]
}

// memoState is a Memo's build: in progress while done is open, then
// replaced by a state without a channel once built.
type memoState struct {
	b    []byte
	err  error
	done chan struct{}
}

var errBuildPanicked = errors.New("storage: the memo's build panicked")

// Get returns the memoized bytes, building them with build the first time.
// Every caller of one Memo must pass an equivalent build.
func (m *Memo) Get(build func() ([]byte, error)) ([]byte, error) {
	if m == nil {
		return build()
	}
	s := m.s.Load()
	if s == nil {
		mine := &memoState{done: make(chan struct{})}
		if m.s.CompareAndSwap(nil, mine) {
			// Also when build panics: the Memo then holds
			// errBuildPanicked, and is not built again.
			mine.err = errBuildPanicked
			defer func() {
				m.s.Store(&memoState{b: mine.b, err: mine.err})
				close(mine.done)
			}()
			mine.b, mine.err = build()
			return mine.b, mine.err
		}
		s = m.s.Load()
	}
	if s.done != nil {
		<-s.done
	}
	return s.b, s.err
}

// Peek returns the memoized bytes if they have been built, without
// building them.
func (m *Memo) Peek() ([]byte, bool) {
	if m == nil {
		return nil, false
	}
	s := m.s.Load()
	if s == nil || s.done != nil || s.err != nil {
		return nil, false
	}
	return s.b, true
}

// Run marks Items[Start:End] of a ListPage as a stretch of objects that
// the reader keeps together and unchanged (a subtree of the watch cache),
// with a memo for whole-run encodings: the gzip-compressed bytes of the
// run in a list response, say, built by the first list that sends the run
// and reused by every later one until an object in it changes.
type Run struct {
	Start, End int
	Memo       *RunMemo
}

// RunMemo holds encodings of one Run, one per form (the format and
// version its items are written in), each built at most once.
type RunMemo struct {
	mu    sync.Mutex
	forms []*runForm
}

type runForm struct {
	key   string
	once  sync.Once
	built atomic.Bool // set once v and err are
	v     any
	err   error
}

// maxRunForms bounds the forms one RunMemo keeps; further forms are built
// on every call. A resource is listed in a handful of forms (JSON and
// protobuf, whole or as PartialObjectMetadata); a bound keeps a resource
// listed in many from growing every memo.
const maxRunForms = 4

// MemoizeRun returns m's form for key, building it with build the first
// time; callers asking for one form wait for its build, not for other
// forms'. Every caller passing one key must pass an equivalent build. A
// nil m builds on every call.
func MemoizeRun[T any](m *RunMemo, key string, build func() (T, error)) (T, error) {
	f := m.form(key)
	if f == nil {
		return build()
	}
	f.once.Do(func() {
		f.v, f.err = build()
		f.built.Store(true)
	})
	v, _ := f.v.(T)
	return v, f.err
}

// form returns key's entry, adding it if there is room; nil if there is
// none (or m is nil).
func (m *RunMemo) form(key string) *runForm {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.forms {
		if f.key == key {
			return f
		}
	}
	if len(m.forms) == maxRunForms {
		return nil
	}
	f := &runForm{key: key}
	m.forms = append(m.forms, f)
	return f
}

// PeekRun returns m's form for key if it has been built, without
// building it.
func PeekRun[T any](m *RunMemo, key string) (T, bool) {
	var zero T
	if m == nil {
		return zero, false
	}
	m.mu.Lock()
	var f *runForm
	for _, g := range m.forms {
		if g.key == key {
			f = g
		}
	}
	m.mu.Unlock()
	if f == nil || !f.built.Load() || f.err != nil {
		return zero, false
	}
	v, ok := f.v.(T)
	return v, ok
}
