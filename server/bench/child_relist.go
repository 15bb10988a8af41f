package bench

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// relistHook forces an informer to relist the way a server does: its
// open watch ends with 410 Expired (the resourceVersion is too old), so
// the reflector lists again from the latest state. Both implementations'
// ListerWatchers are wrapped with it; nothing inside either informer is
// touched. done is closed when the first complete list (the last page of
// a LIST, or the initial-events-end bookmark of a streaming list) after
// the trigger has been received.
type relistHook struct {
	mu        sync.Mutex
	triggered bool
	expire    bool   // the current watch must end with 410
	stop      func() // ends the current watch, if any
	done      chan struct{}
	closed    bool
}

func newRelistHook() *relistHook { return &relistHook{done: make(chan struct{})} }

// trigger makes the current (and, if none is open, the next) watch end
// with 410 Expired.
func (h *relistHook) trigger() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.triggered, h.expire = true, true
	if h.stop != nil {
		h.stop()
	}
}

// watching registers the stop func of a newly opened watch and reports
// whether it must fail at once.
func (h *relistHook) watching(stop func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stop = stop
	return h.expire
}

// expired reports (once) that the current watch must end with 410.
func (h *relistHook) expired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.expire
	h.expire = false
	return e
}

// listed records a list (or streaming list) completing.
func (h *relistHook) listed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.triggered && !h.closed {
		h.closed = true
		close(h.done)
	}
}

func expiredStatus() *wire.Status {
	return wire.NewResourceExpired("too old resource version (bench relist)")
}

// listwatchRelistLW wraps lw so h can expire its watch. It lists in
// chunks, as the informer does over lw itself, when lw can.
func listwatchRelistLW[T object.Object](lw informer.ListerWatcher[T], h *relistHook) informer.ListerWatcher[T] {
	var chunks func(ctx context.Context, o wire.ListOptions, chunk int, each func([]T) error) (wire.ListMeta, error)
	if cl, ok := lw.(informer.ChunkLister[T]); ok {
		chunks = func(ctx context.Context, o wire.ListOptions, chunk int, each func([]T) error) (wire.ListMeta, error) {
			m, err := cl.ListChunks(ctx, o, chunk, each)
			if err == nil && m.Continue == "" {
				h.listed()
			}
			return m, err
		}
	}
	return informer.ListWatchFuncs[T]{
		// The funcs only observe: the informer treats lw's items as it
		// would without the wrapper.
		ListsUntouched: true,
		ListChunksFunc: chunks,
		ListFunc: func(ctx context.Context, o wire.ListOptions) (*wire.List[T], error) {
			l, err := lw.List(ctx, o)
			if err == nil && l.Metadata.Continue == "" {
				h.listed()
			}
			return l, err
		},
		WatchFunc: func(ctx context.Context, o wire.ListOptions) (client.Watcher[T], error) {
			w, err := lw.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			ew := &expiringWatcher[T]{w: w, h: h}
			if h.watching(func() { _ = w.Close() }) {
				_ = w.Close()
			}
			return ew, nil
		},
	}
}

type expiringWatcher[T object.Object] struct {
	w client.Watcher[T]
	h *relistHook
}

func (e *expiringWatcher[T]) Next() (wire.Event[T], error) {
	ev, err := e.w.Next()
	if err != nil && e.h.expired() {
		return ev, expiredStatus()
	}
	if err == nil && ev.Type == wire.Bookmark && ev.Object.GetAnnotations()[wire.AnnotationInitialEventsEnd] == "true" {
		e.h.listed()
	}
	return ev, err
}

func (e *expiringWatcher[T]) Close() error { return e.w.Close() }

// clientGoRelistLW wraps client-go list and watch functions so h can
// expire the watch: client-go then sees an ERROR event carrying a 410
// Expired Status, as from kube-apiserver.
func clientGoRelistLW(list func(context.Context, metav1.ListOptions) (k8sruntime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), h *relistHook) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
			l, err := list(ctx, o)
			if err == nil {
				if m, merr := meta.ListAccessor(l); merr == nil && m.GetContinue() == "" {
					h.listed()
				}
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, o)
			if err != nil {
				return nil, err
			}
			return newExpiringCGWatch(w, h), nil
		},
	}
}

// expiringCGWatch relays a client-go watch until the hook fires, then
// sends one 410 Expired ERROR event and closes.
type expiringCGWatch struct {
	w    watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newExpiringCGWatch(w watch.Interface, h *relistHook) *expiringCGWatch {
	e := &expiringCGWatch{w: w, out: make(chan watch.Event), stop: make(chan struct{})}
	fire := make(chan struct{})
	var fireOnce sync.Once
	if h.watching(func() { fireOnce.Do(func() { close(fire) }) }) {
		fireOnce.Do(func() { close(fire) })
	}
	go func() {
		defer close(e.out)
		defer w.Stop()
		in := w.ResultChan()
		for {
			select {
			case <-e.stop:
				return
			case <-fire:
				if h.expired() {
					st := expiredStatus()
					ev := watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure,
						Code: st.Code, Reason: metav1.StatusReason(st.Reason), Message: st.Message}}
					select {
					case e.out <- ev:
					case <-e.stop:
					}
				}
				return
			case ev, ok := <-in:
				if !ok {
					return
				}
				if ev.Type == watch.Bookmark {
					if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
						h.listed()
					}
				}
				select {
				case e.out <- ev:
				case <-e.stop:
					return
				}
			}
		}
	}()
	return e
}

func (e *expiringCGWatch) Stop()                          { e.once.Do(func() { close(e.stop) }) }
func (e *expiringCGWatch) ResultChan() <-chan watch.Event { return e.out }

// heapSampler records, every interval until stopped, the peak of the
// heap's object bytes (live and not yet collected), of the live heap as
// of the last GC, and of VmRSS.
type heapSampler struct {
	stopc          chan struct{}
	wg             sync.WaitGroup
	peakHeap       uint64
	peakLive       uint64
	peakRSS        uint64
	samples, gcs   int
	startGC, endGC uint32
}

func startHeapSampler(interval time.Duration) *heapSampler {
	s := &heapSampler{stopc: make(chan struct{})}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.startGC = ms.NumGC
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		rssEvery := 0
		for {
			metrics.Read(sample)
			s.peakHeap = max(s.peakHeap, sample[0].Value.Uint64())
			s.peakLive = max(s.peakLive, sample[1].Value.Uint64())
			if rssEvery%5 == 0 {
				if rss, err := procStatusBytes("self", "VmRSS"); err == nil {
					s.peakRSS = max(s.peakRSS, rss)
				}
			}
			rssEvery++
			s.samples++
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *heapSampler) stop() {
	close(s.stopc)
	s.wg.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.endGC = ms.NumGC
	s.gcs = int(s.endGC - s.startGC)
}
