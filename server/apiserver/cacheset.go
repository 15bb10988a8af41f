package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/run"
	"github.com/listwatch/listwatch/server"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/cache"
)

// cacheSet opens the server's per-resource readers (server.Readers): one
// watch cache per resource the server's registry opens, started when Run
// starts (or, for a resource registered later, when it is opened), as
// kube-apiserver starts its caches with the server, and stopped when the
// registry closes the resource's reader (its definition changed, or it
// went away) or when Run returns. Reads that arrive while a cache is
// still filling, after it was closed, or when Run is not running, go to
// the direct reader, so a cache still filling costs no extra latency, and
// the first LIST of a large resource no longer waits for nor pays the
// cache's build.
//
// Lock order: cacheSet.mu, then nothing (caches are called unlocked).
type cacheSet struct {
	store    storage.Interface
	fallback storage.ListWatcher
	log      *slog.Logger
	reg      prometheus.Registerer
	// freshness is the caches' FreshnessTimeout; zero for their default.
	freshness time.Duration

	mu sync.Mutex
	// open holds every reader opened and not yet closed. guarded by mu
	open map[*cachedReader]struct{}
	// stopping maps a resource name to the done channel of its closed
	// cache while that cache is still stopping. A new cache of the
	// resource starts only after it: caches share metric series by
	// resource name, and a stopping cache deletes them. guarded by mu
	stopping map[string]chan struct{}
	// running is set when Run starts; before it reads create no cache.
	// Guarded by mu.
	running bool
	// group runs the caches. A cache is created only when the group takes
	// its Run (get holds mu around both), so every started cache is
	// waited for, and none is made once Run has begun stopping.
	group run.Group
}

func newCacheSet(store storage.Interface, fallback storage.ListWatcher, log *slog.Logger, reg prometheus.Registerer) *cacheSet {
	return &cacheSet{
		store:    store,
		fallback: fallback,
		log:      log,
		reg:      reg,
		open:     map[*cachedReader]struct{}{},
		stopping: map[string]chan struct{}{},
	}
}

var _ server.Readers = (*cacheSet)(nil)

// Run lets reads create caches and runs each one until ctx ends or its
// reader is closed; it returns after all of them have stopped.
func (s *cacheSet) Run(ctx context.Context) error {
	s.mu.Lock()
	s.running = true
	for r := range s.open {
		r.startIfIdleLocked()
	}
	s.mu.Unlock()
	return s.group.Run(ctx)
}

// Open returns the reader of one resource, and starts its cache if Run
// runs.
func (s *cacheSet) Open(spec server.ReaderSpec) server.ResourceReader {
	r := &cachedReader{set: s, spec: spec}
	s.mu.Lock()
	s.open[r] = struct{}{}
	r.startIfIdleLocked()
	s.mu.Unlock()
	return r
}

// name identifies the resource whose cache r has: its resource name, or
// its prefix for a reader opened without one (tests).
func (r *cachedReader) name() string {
	if r.spec.Resource != "" {
		return r.spec.Resource
	}
	return r.spec.Prefix
}

// startIfIdleLocked starts r's cache unless it has one, is closed, Run is
// not running, or the resource's previous definition still has a cache
// (running, or stopping): caches of one resource share metric series, so
// they never overlap. Close starts the successor once the old cache has
// stopped. set.mu is held.
func (r *cachedReader) startIfIdleLocked() {
	s := r.set
	if r.c != nil || r.closed || !s.running || s.stopping[r.name()] != nil {
		return
	}
	for o := range s.open {
		if o != r && o.c != nil && o.name() == r.name() {
			return
		}
	}
	r.startLocked()
}

// cachedReader is one resource's reader: its watch cache once started,
// else the direct reader.
type cachedReader struct {
	set  *cacheSet
	spec server.ReaderSpec

	// c is the cache, nil until the first read while Run runs; stop ends
	// its Run and done is closed when Run has returned. closed: Close was
	// called, and no cache will be made. All guarded by set.mu.
	c      *cache.Cache
	stop   context.CancelFunc
	done   chan struct{}
	closed bool
}

var _ server.ResourceReader = (*cachedReader)(nil)

// startLocked creates the cache and gives its Run to the group, unless
// the group is stopping; set.mu is held.
func (r *cachedReader) startLocked() {
	s := r.set
	// The cache is made only once the group has taken its Run: a cache
	// registers metric series that only its Run removes.
	made := make(chan *cache.Cache, 1)
	closed, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	ok := s.group.Go(r.spec.Resource, func(ctx context.Context) error {
		defer close(done)
		c := <-made
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(closed, cancel)()
		if err := c.Run(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("watch cache stopped", "resource", r.spec.Resource, "err", err)
		}
		return nil
	})
	if !ok {
		stop()
		return
	}
	r.c = cache.New(cache.Config{
		Store:      s.store,
		Prefix:     r.spec.Prefix,
		Attrs:      r.spec.Attrs,
		Logger:     s.log,
		Registerer: s.reg,
		Resource:   r.spec.Resource,

		FreshnessTimeout: s.freshness,
	})
	made <- r.c
	r.stop, r.done = stop, done
}

// get returns the ready cache, creating it if needed; nil means "not
// ready yet, closed, or the resource's previous cache is still stopping:
// read from the fallback".
func (r *cachedReader) get() *cache.Cache {
	s := r.set
	s.mu.Lock()
	r.startIfIdleLocked()
	c := r.c
	s.mu.Unlock()
	if c == nil || !c.Ready() {
		return nil
	}
	return c
}

// Close stops the cache, if any, and returns after its Run has: its etcd
// watch and goroutines are gone, and its watchers were ended with
// cache.ErrStopped. Later reads go to the fallback.
func (r *cachedReader) Close() {
	s := r.set
	s.mu.Lock()
	r.closed = true
	delete(s.open, r)
	stop, done := r.stop, r.done
	r.c, r.stop, r.done = nil, nil, nil
	if stop != nil {
		s.stopping[r.name()] = done
	}
	s.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
	s.mu.Lock()
	if s.stopping[r.name()] == done {
		delete(s.stopping, r.name())
		// The resource's new definition, if any, gets its cache now.
		for o := range s.open {
			if o.name() == r.name() {
				o.startIfIdleLocked()
			}
		}
	}
	s.mu.Unlock()
}

func (r *cachedReader) GetList(ctx context.Context, prefix string, opts storage.GetListOptions) (storage.ListPage, error) {
	if c := r.get(); c != nil {
		page, err := c.GetList(ctx, prefix, opts)
		if !errors.Is(err, cache.ErrNotReady) {
			return page, err
		}
	}
	return r.set.fallback.GetList(ctx, prefix, opts)
}

func (r *cachedReader) WatchList(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.EventStream, error) {
	if c := r.get(); c != nil {
		if opts.Mode == storage.ReadExact && !c.Reaches(opts.Revision) {
			// The cache's history begins after the revision asked for,
			// which etcd may still hold: a cache started after the list
			// the client watches from (a new CRD's first list was read
			// from etcd, and another write came before the cache's own
			// list), or a client that fell behind. kube-apiserver answers
			// 410 and the client relists; the direct reader watches from
			// etcd instead, and answers 410 only if etcd compacted it
			// (TestCacheSetWatchBehindCacheFallsBack).
			return r.set.fallback.WatchList(ctx, prefix, opts)
		}
		w, err := c.WatchList(ctx, prefix, opts)
		var tooLarge *storage.TooLargeResourceVersionError
		switch {
		case errors.Is(err, cache.ErrNotReady):
		case errors.As(err, &tooLarge) && opts.Mode == storage.ReadMostRecent:
			// A watch-list (sendInitialEvents=true, no resourceVersion)
			// on a cache that could not prove within its timeout that it
			// holds etcd's current revision (etcd answers no progress
			// request while the cache's watch is catching up, which can
			// last when etcd is busy): kube-apiserver answers 504 and the
			// client retries a second later. The direct reader serves the
			// same consistent initial list from etcd at once, as a
			// consistent LIST falls back (TestCacheSetWatchListFallsBack).
			// (At start this used to happen to every loopback informer:
			// the caches shared one etcd watch stream, which a watch just
			// opened at etcd's revision + 1 kept from any progress; each
			// cache now has its own, see cache.Cache.watchStream.)
			if ctx.Err() != nil {
				// The watch's own time (its timeoutSeconds) ended the
				// wait: too late to read etcd; the client gets the 504 as
				// the stream's ERROR event, as from kube's cacher.
				return nil, err
			}
		default:
			return w, err
		}
	}
	return r.set.fallback.WatchList(ctx, prefix, opts)
}
