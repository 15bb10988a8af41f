package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/cache"
)

// cacheSet is the server's storage.ListWatcher: one watch cache per
// resource, created on the resource's first read and kept until the server
// stops. Reads that arrive while a cache is still filling go to the direct
// reader, so a cold resource costs no extra latency.
//
// Lock order: cacheSet.mu, then nothing (caches are called unlocked).
type cacheSet struct {
	store    storage.Interface
	fallback storage.ListWatcher
	log      *slog.Logger
	reg      prometheus.Registerer
	// attrsFor gives the selectable-field extractor of a resource prefix;
	// set before Run.
	attrsFor func(resourcePrefix string) storage.AttrFunc

	mu      sync.Mutex
	caches  map[string]*cache.Cache // by resource prefix; guarded by mu
	started chan *cache.Cache       // new caches for Run to start
}

func newCacheSet(store storage.Interface, fallback storage.ListWatcher, log *slog.Logger, reg prometheus.Registerer) *cacheSet {
	return &cacheSet{
		store:    store,
		fallback: fallback,
		log:      log,
		reg:      reg,
		caches:   map[string]*cache.Cache{},
		started:  make(chan *cache.Cache, 64),
	}
}

var _ storage.ListWatcher = (*cacheSet)(nil)

// Run starts each cache as it is created and returns after all of them
// have stopped.
func (s *cacheSet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-s.started:
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Run(ctx); err != nil && ctx.Err() == nil {
					s.log.Error("watch cache stopped", "err", err)
				}
			}()
		}
	}
}

// resourcePrefix maps a request prefix ("/registry/configmaps/ns/") to its
// resource's prefix ("/registry/configmaps/"). Group names always contain a
// dot and core resource names never do, which tells the two layouts apart.
func resourcePrefix(prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(prefix, "/registry/")
	if !ok {
		return "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	n := 1
	if strings.Contains(parts[0], ".") {
		n = 2
	}
	if len(parts) < n+1 || parts[n-1] == "" {
		return "", false
	}
	return "/registry/" + strings.Join(parts[:n], "/") + "/", true
}

// get returns the ready cache for prefix, creating it if needed; nil
// means "not ready yet: read from the fallback".
func (s *cacheSet) get(prefix string) *cache.Cache {
	rp, ok := resourcePrefix(prefix)
	if !ok {
		return nil
	}
	s.mu.Lock()
	c, found := s.caches[rp]
	if !found {
		var attrs storage.AttrFunc
		if s.attrsFor != nil {
			attrs = s.attrsFor(rp)
		}
		c = cache.New(cache.Config{
			Store:      s.store,
			Prefix:     rp,
			Attrs:      attrs,
			Logger:     s.log,
			Registerer: s.reg,
			Resource:   strings.TrimSuffix(strings.TrimPrefix(rp, "/registry/"), "/"),
		})
		select {
		case s.started <- c:
			s.caches[rp] = c
		default:
			// Run is behind; try again on the next request.
			c = nil
		}
	}
	s.mu.Unlock()
	if c == nil || !c.Ready() {
		return nil
	}
	return c
}

func (s *cacheSet) GetList(ctx context.Context, prefix string, opts storage.GetListOptions) (storage.ListPage, error) {
	if c := s.get(prefix); c != nil {
		page, err := c.GetList(ctx, prefix, opts)
		if !errors.Is(err, cache.ErrNotReady) {
			return page, err
		}
	}
	return s.fallback.GetList(ctx, prefix, opts)
}

func (s *cacheSet) WatchList(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.EventStream, error) {
	if c := s.get(prefix); c != nil {
		w, err := c.WatchList(ctx, prefix, opts)
		if !errors.Is(err, cache.ErrNotReady) {
			return w, err
		}
	}
	return s.fallback.WatchList(ctx, prefix, opts)
}
