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
// resource, created on the resource's first read while Run is running,
// and kept until Run returns. Reads that arrive while a cache is still
// filling, or when Run is not running, go to the direct reader, so a cold
// resource costs no extra latency.
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

	mu     sync.Mutex
	caches map[string]*cache.Cache // by resource prefix; guarded by mu
	// runCtx is Run's context while Run runs, nil before and after; a
	// cache is created, and its Run started in wg, only while it is set,
	// so every started cache is waited for and none is left unstarted.
	// Guarded by mu.
	runCtx context.Context
	wg     sync.WaitGroup
}

func newCacheSet(store storage.Interface, fallback storage.ListWatcher, log *slog.Logger, reg prometheus.Registerer) *cacheSet {
	return &cacheSet{
		store:    store,
		fallback: fallback,
		log:      log,
		reg:      reg,
		caches:   map[string]*cache.Cache{},
	}
}

var _ storage.ListWatcher = (*cacheSet)(nil)

// Run lets reads create caches and runs each one until ctx ends; it
// returns after all of them have stopped.
func (s *cacheSet) Run(ctx context.Context) error {
	s.mu.Lock()
	s.runCtx = ctx
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.runCtx = nil
	s.mu.Unlock()
	// No cache starts after runCtx is cleared, so Wait sees every Add.
	s.wg.Wait()
	return nil
}

// startLocked creates the cache of resource prefix rp and starts its Run
// under Run's context; s.mu is held and s.runCtx set.
func (s *cacheSet) startLocked(rp string) *cache.Cache {
	var attrs storage.AttrFunc
	if s.attrsFor != nil {
		attrs = s.attrsFor(rp)
	}
	c := cache.New(cache.Config{
		Store:      s.store,
		Prefix:     rp,
		Attrs:      attrs,
		Logger:     s.log,
		Registerer: s.reg,
		Resource:   strings.TrimSuffix(strings.TrimPrefix(rp, "/registry/"), "/"),
	})
	s.caches[rp] = c
	ctx := s.runCtx
	s.wg.Go(func() {
		if err := c.Run(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("watch cache stopped", "err", err)
		}
	})
	return c
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
	if !found && s.runCtx != nil {
		c = s.startLocked(rp)
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
