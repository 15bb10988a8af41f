package informer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

type U = *object.Unstructured

// fakeServer is an in-memory API server for one resource, with knobs to
// inject the faults a real server and network produce. It starts no
// goroutines.
type fakeServer struct {
	mu        sync.Mutex
	rv        uint64
	uid       int
	objs      map[string]U // current state; never handed out
	history   []wire.Event[U]
	compacted uint64 // watches from an RV below this get 410
	watchers  map[*fakeWatcher]struct{}
	snapshots map[string]map[string]U // continue token prefix -> state

	// Faults, consumed one per call.
	listErrs           []error
	watchErrs          []error
	expireNextContinue int
	replayOnWatch      int // re-send this many old events at watch start
	// Streaming list: "ok", "refuse" (400 at start) or "ignore" (the
	// stream ends without initial events).
	streaming string

	listCalls, watchCalls, streamCalls int
	// lists are the options of every List call, in order.
	lists []wire.ListOptions
	// down makes every List and Watch fail with ECONNREFUSED.
	down bool
}

func (s *fakeServer) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func newFakeServer() *fakeServer {
	return &fakeServer{objs: map[string]U{}, watchers: map[*fakeWatcher]struct{}{},
		snapshots: map[string]map[string]U{}, streaming: "ok", rv: 1}
}

func newObj(ns, name string, labels map[string]string) U {
	u := &object.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

// write applies an event at a new revision and tells the watchers.
func (s *fakeServer) writeLocked(t wire.EventType, obj U) {
	s.rv++
	obj = obj.DeepCopy()
	obj.SetResourceVersion(strconv.FormatUint(s.rv, 10))
	key := object.Key(obj)
	if t == wire.Deleted {
		delete(s.objs, key)
	} else {
		s.objs[key] = obj
	}
	ev := wire.Event[U]{Type: t, Object: obj}
	s.history = append(s.history, ev)
	for w := range s.watchers {
		w.push(copyEvent(ev)) // a client never shares memory with the server
	}
}

func (s *fakeServer) upsert(ns, name string, labels map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := object.NewKey(ns, name)
	obj := newObj(ns, name, labels)
	t := wire.Modified
	if old, ok := s.objs[key]; ok {
		obj.SetNested(old.GetUID(), "metadata", "uid")
	} else {
		t = wire.Added
		s.uid++
		obj.SetNested("uid-"+strconv.Itoa(s.uid), "metadata", "uid")
	}
	s.writeLocked(t, obj)
}

func (s *fakeServer) remove(ns, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.objs[object.NewKey(ns, name)]
	if ok {
		s.writeLocked(wire.Deleted, old)
	}
	return ok
}

// bookmark sends a BOOKMARK at rv to every watcher ("" = current).
func (s *fakeServer) bookmark(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv == "" {
		rv = strconv.FormatUint(s.rv, 10)
	}
	b := &object.Unstructured{}
	b.SetResourceVersion(rv)
	for w := range s.watchers {
		w.push(wire.Event[U]{Type: wire.Bookmark, Object: b})
	}
}

// endWatches ends every open watch with err after what it has buffered
// (io.EOF: a clean end, like timeoutSeconds).
func (s *fakeServer) endWatches(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.end(err)
		delete(s.watchers, w)
	}
}

// compact forgets the watch history: watches from older RVs get 410.
func (s *fakeServer) compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
}

// restart models a server restart: watches end, history is lost.
func (s *fakeServer) restart() {
	s.endWatches(io.EOF)
	s.compact()
}

// state returns key -> resourceVersion of the current objects.
func (s *fakeServer) state() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, o := range s.objs {
		out[k] = o.GetResourceVersion()
	}
	return out
}

// listed returns the options of the List calls so far.
func (s *fakeServer) listed() []wire.ListOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lists)
}

func gone() error { return wire.NewResourceExpired("too old resource version") }

func (s *fakeServer) List(ctx context.Context, opts wire.ListOptions) (*wire.List[U], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listCalls++
	s.lists = append(s.lists, opts)
	if s.down {
		return nil, syscall.ECONNREFUSED
	}
	if len(s.listErrs) > 0 {
		err := s.listErrs[0]
		s.listErrs = s.listErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	var snap map[string]U
	var listRV, after string
	if opts.Continue != "" {
		if s.expireNextContinue > 0 {
			s.expireNextContinue--
			return nil, wire.NewResourceExpired("continue token expired")
		}
		var ok bool
		listRV, after, _ = strings.Cut(opts.Continue, "/")
		if snap, ok = s.snapshots[listRV]; !ok {
			return nil, wire.NewResourceExpired("continue token unknown")
		}
	} else {
		listRV = strconv.FormatUint(s.rv, 10)
		snap = maps.Clone(s.objs)
		s.snapshots[listRV] = snap
	}
	keys := slices.Sorted(maps.Keys(snap))
	out := &wire.List[U]{Metadata: wire.ListMeta{ResourceVersion: listRV}}
	for _, k := range keys {
		if after != "" && k <= after {
			continue
		}
		if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
			out.Metadata.Continue = listRV + "/" + object.Key(out.Items[len(out.Items)-1])
			break
		}
		out.Items = append(out.Items, snap[k].DeepCopy())
	}
	return out, nil
}

func (s *fakeServer) Watch(ctx context.Context, opts wire.ListOptions) (client.Watcher[U], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchCalls++
	if s.down {
		return nil, syscall.ECONNREFUSED
	}
	if len(s.watchErrs) > 0 {
		err := s.watchErrs[0]
		s.watchErrs = s.watchErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	w := &fakeWatcher{ctx: ctx, notify: make(chan struct{}, 1)}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		s.streamCalls++
		switch s.streaming {
		case "refuse":
			return nil, wire.NewBadRequest("sendInitialEvents is not supported")
		case "ignore":
			w.end(io.EOF)
			return w, nil
		}
		for _, k := range slices.Sorted(maps.Keys(s.objs)) {
			w.push(wire.Event[U]{Type: wire.Added, Object: s.objs[k].DeepCopy()})
		}
		b := &object.Unstructured{}
		b.SetResourceVersion(strconv.FormatUint(s.rv, 10))
		b.SetAnnotations(map[string]string{wire.AnnotationInitialEventsEnd: "true"})
		w.push(wire.Event[U]{Type: wire.Bookmark, Object: b})
		s.watchers[w] = struct{}{}
		return w, nil
	}
	from, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
	if err != nil || from == 0 {
		from = s.rv
	}
	if from < s.compacted {
		// kube-apiserver answers 200, then one ERROR event, then closes.
		w.end(gone())
		return w, nil
	}
	if n := s.replayOnWatch; n > 0 {
		s.replayOnWatch = 0
		// Duplicates and out-of-order delivery: the oldest events again,
		// in reverse order, before the new ones.
		for i := min(n, len(s.history)) - 1; i >= 0; i-- {
			if rv, _ := strconv.ParseUint(s.history[i].Object.GetResourceVersion(), 10, 64); rv <= from {
				w.push(copyEvent(s.history[i]))
			}
		}
	}
	for _, ev := range s.history {
		if rv, _ := strconv.ParseUint(ev.Object.GetResourceVersion(), 10, 64); rv > from {
			w.push(copyEvent(ev))
		}
	}
	s.watchers[w] = struct{}{}
	return w, nil
}

func copyEvent(ev wire.Event[U]) wire.Event[U] {
	return wire.Event[U]{Type: ev.Type, Object: ev.Object.DeepCopy()}
}

// fakeWatcher buffers events; Next blocks until one arrives, the stream
// ends, it is closed, or its context ends.
type fakeWatcher struct {
	ctx    context.Context
	notify chan struct{}

	mu     sync.Mutex
	buf    []wire.Event[U]
	endErr error
	closed bool
}

var errClosed = errors.New("fake watch: closed by client")

func (w *fakeWatcher) push(ev wire.Event[U]) {
	w.mu.Lock()
	if w.endErr == nil {
		w.buf = append(w.buf, ev)
	}
	w.mu.Unlock()
	w.wake()
}

func (w *fakeWatcher) end(err error) {
	w.mu.Lock()
	if w.endErr == nil {
		w.endErr = err
	}
	w.mu.Unlock()
	w.wake()
}

func (w *fakeWatcher) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *fakeWatcher) Next() (wire.Event[U], error) {
	for {
		w.mu.Lock()
		switch {
		case w.closed:
			w.mu.Unlock()
			return wire.Event[U]{}, errClosed
		case len(w.buf) > 0:
			ev := w.buf[0]
			w.buf = w.buf[1:]
			w.mu.Unlock()
			return ev, nil
		case w.endErr != nil:
			err := w.endErr
			w.mu.Unlock()
			return wire.Event[U]{}, err
		}
		w.mu.Unlock()
		select {
		case <-w.ctx.Done():
			return wire.Event[U]{}, w.ctx.Err()
		case <-w.notify:
		}
	}
}

func (w *fakeWatcher) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wake()
	return nil
}

// recorder is a Handler that checks each key's history is consistent and
// keeps what the handler believes the state is.
type recorder struct {
	mu      sync.Mutex
	state   map[string]string // key -> RV
	errs    []string
	adds    int
	updates int
	syncs   int
	deletes int
	unknown int
	initial int
}

func newRecorder() *recorder { return &recorder{state: map[string]string{}} }

func (r *recorder) fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) OnAdd(obj U, initial bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := object.Key(obj)
	if rv, ok := r.state[k]; ok {
		r.fail("add %s@%s while present @%s", k, obj.GetResourceVersion(), rv)
	}
	r.state[k] = obj.GetResourceVersion()
	r.adds++
	if initial {
		r.initial++
	}
}

func (r *recorder) OnUpdate(old, obj U) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := object.Key(obj)
	rv, ok := r.state[k]
	switch {
	case !ok:
		r.fail("update %s before add", k)
	case rv != old.GetResourceVersion():
		r.fail("update %s: old @%s, handler had @%s", k, old.GetResourceVersion(), rv)
	case old.GetUID() != obj.GetUID():
		// A re-created object must arrive as a delete and an add.
		r.fail("update %s from uid %s to another object, uid %s", k, old.GetUID(), obj.GetUID())
	}
	if old.GetResourceVersion() == obj.GetResourceVersion() {
		r.syncs++
	} else {
		r.updates++
	}
	r.state[k] = obj.GetResourceVersion()
}

func (r *recorder) OnDelete(obj U, finalStateUnknown bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := object.Key(obj)
	if _, ok := r.state[k]; !ok {
		r.fail("delete %s while absent", k)
	}
	delete(r.state, k)
	r.deletes++
	if finalStateUnknown {
		r.unknown++
	}
}

func (r *recorder) snapshot() (map[string]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.state), slices.Clone(r.errs)
}
