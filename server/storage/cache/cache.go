package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
)

// Errors of the cache. The watcher errors wrap storage.ErrWatchClosed: the
// server ends such a stream cleanly and the client resumes from the last
// resourceVersion it saw.
var (
	// ErrWatcherTooSlow ends a watch that fell more than WatcherBuffer
	// events behind, after it has delivered the events it had.
	ErrWatcherTooSlow = fmt.Errorf("cache: watcher too slow: %w", storage.ErrWatchClosed)
	// ErrRelisted ends the watches open when the cache had to re-list
	// from storage (its own watch hit a compacted revision).
	ErrRelisted = fmt.Errorf("cache: re-listed from storage: %w", storage.ErrWatchClosed)
	// ErrStopped ends the watches open when the cache's Run returns.
	ErrStopped = fmt.Errorf("cache: stopped: %w", storage.ErrWatchClosed)
	// ErrNotReady: a watch arrived before the cache's first list finished
	// (within FreshnessTimeout). Kubernetes answers 429 with Retry-After.
	ErrNotReady = errors.New("cache: not ready")
	// ErrOutsidePrefix: a request prefix outside the cache's Prefix.
	ErrOutsidePrefix = errors.New("cache: prefix outside the cache")
)

// Config configures a Cache. Store and Prefix are required; zero values of
// the rest take the defaults noted.
type Config struct {
	Store storage.Interface
	// Prefix is the resource's key prefix, ending in "/".
	Prefix string
	// Attrs extracts labels and selectable fields; nil: storage.DefaultAttrs.
	// They are extracted once per stored value, so selectors in requests
	// are evaluated against these, not against Predicate.Attrs.
	Attrs storage.AttrFunc
	// HistorySize caps the events kept (default 102400); HistoryAge drops
	// events older than it (default 5 min), but the newest HistoryMin
	// (default 100) stay whatever their age, as kube's watch cache keeps
	// its lower bound of events: a quiet resource's watch resumes from an
	// old resourceVersion instead of relisting. Watches and Exact reads
	// can start at any revision the history still holds.
	HistorySize int
	HistoryAge  time.Duration
	HistoryMin  int
	// BookmarkInterval between bookmarks to watchers that allow them
	// (default 1 min).
	BookmarkInterval time.Duration
	// WatcherBuffer is how many events a watcher may lag behind before it
	// is closed with ErrWatcherTooSlow (default 10000, at most HistorySize).
	WatcherBuffer int
	// FreshnessTimeout bounds waits for the cache to reach a revision
	// (default 3 s). A consistent LIST then reads storage directly.
	FreshnessTimeout time.Duration
	Logger           *slog.Logger
	// Registerer for metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Resource labels the metrics, e.g. "pods" or "widgets.example.com".
	Resource string
}

func (cfg Config) withDefaults() Config {
	if cfg.Attrs == nil {
		cfg.Attrs = storage.DefaultAttrs
	}
	if cfg.HistorySize <= 0 {
		cfg.HistorySize = 100 * 1024
	}
	if cfg.HistoryMin <= 0 {
		cfg.HistoryMin = 100
	}
	cfg.HistoryMin = min(cfg.HistoryMin, cfg.HistorySize)
	if cfg.HistoryAge <= 0 {
		cfg.HistoryAge = 5 * time.Minute
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.WatcherBuffer <= 0 {
		cfg.WatcherBuffer = 10000
	}
	cfg.WatcherBuffer = min(cfg.WatcherBuffer, cfg.HistorySize)
	if cfg.FreshnessTimeout <= 0 {
		cfg.FreshnessTimeout = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Resource == "" {
		cfg.Resource = strings.Trim(cfg.Prefix, "/")
	}
	return cfg
}

// Cache is the watch cache of one resource prefix. It implements
// storage.ListWatcher.
type Cache struct {
	cfg Config
	m   *metrics
	log *slog.Logger
	// store reads pages straight from storage when the cache cannot
	// answer (see listStore).
	store *direct.Reader

	// mu guards the fields below. The Run goroutine is the only writer;
	// readers hold it only to take a snapshot or move a watcher's cursor,
	// never while copying values or replaying writes; a watcher encodes
	// under it only an event's frame, once for all watchers (or, past
	// the ring's frame window, for itself). It is a leaf lock.
	mu sync.RWMutex
	// valueBytes is the size of the values snap holds (HeldValueBytes).
	valueBytes int64
	// snap is the current state; rev is the latest revision seen
	// (>= every event's revision; progress notifications advance it).
	snap tree
	rev  int64
	// ring is the history; replaced, never reset, on a re-list, so
	// watchers of the old one can drain it.
	ring *ring
	// lastEventRev and keysAtLastRev let a re-watch resume inside a
	// multi-key transaction without applying an event twice.
	lastEventRev  int64
	keysAtLastRev []string
	// epoch counts bookmark ticks; watchers compare it with their own.
	epoch uint64
	// notify is closed and replaced whenever any of the above changes.
	notify  chan struct{}
	ready   bool
	stopped bool
	// readyCh is closed when the first list completes.
	readyCh chan struct{}
}

var _ storage.ListWatcher = (*Cache)(nil)

// New returns a cache that serves nothing until Run has listed the prefix.
func New(cfg Config) *Cache {
	cfg = cfg.withDefaults()
	return &Cache{
		cfg:     cfg,
		store:   direct.New(cfg.Store),
		m:       newMetrics(cfg.Registerer, cfg.Resource),
		log:     cfg.Logger.With("resource", cfg.Resource),
		notify:  make(chan struct{}),
		readyCh: make(chan struct{}),
	}
}

// Ready reports whether the cache has listed its prefix and is running.
func (c *Cache) Ready() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready && !c.stopped
}

// WaitReady blocks until the first list completes or ctx ends.
func (c *Cache) WaitReady(ctx context.Context) error {
	select {
	case <-c.readyCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// broadcastLocked wakes every waiter; c.mu must be held for writing.
func (c *Cache) broadcastLocked() {
	close(c.notify)
	c.notify = make(chan struct{})
}

// state returns the current snapshot, its revision and the change channel.
func (c *Cache) state() (tree, int64, bool, <-chan struct{}) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.snap, c.rev, c.ready && !c.stopped, c.notify
}

// Pokes while waiting for a revision: the first at once, then after
// pokeFirstDelay, doubling up to pokeMaxDelay. A progress request can go
// unanswered: etcd ignores it while a watch of the stream is catching up
// or starts beyond etcd's revision, and the cache's own watch may not be
// established yet when it is sent (a cache just started); the quick
// retries cover those moments at the cost of a few small messages.
const (
	pokeFirstDelay = 10 * time.Millisecond
	pokeMaxDelay   = 250 * time.Millisecond
)

// waitFor blocks until the cache is ready and has seen revision rev, for
// at most timeout. poke, if not nil, is called now and then while waiting
// (to ask storage for a progress notification).
func (c *Cache) waitFor(ctx context.Context, rev int64, timeout time.Duration, poke func()) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	delay := pokeFirstDelay
	var pokes *time.Timer
	if poke != nil {
		pokes = time.NewTimer(delay)
		defer pokes.Stop()
		tick = pokes.C
		poke()
	}
	for {
		_, cur, ready, ch := c.state()
		if ready && cur >= rev {
			return true
		}
		select {
		case <-ch:
		case <-tick:
			poke()
			delay = min(2*delay, pokeMaxDelay)
			pokes.Reset(delay)
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// checkPrefix accepts the cache's prefix or a narrower one (a namespace).
func (c *Cache) checkPrefix(prefix string) error {
	if !strings.HasPrefix(prefix, c.cfg.Prefix) {
		return fmt.Errorf("%w: %q is not under %q", ErrOutsidePrefix, prefix, c.cfg.Prefix)
	}
	return nil
}

var _ storage.Peeker = (*Cache)(nil)

// Peek implements storage.Peeker: the object under key as the cache holds
// it now.
func (c *Cache) Peek(key string) (storage.KV, bool) {
	snap, _, ready, _ := c.state()
	if !ready {
		return storage.KV{}, false
	}
	e := snap.Get(key)
	if e == nil {
		return storage.KV{}, false
	}
	return e.kv(), true
}

// Reaches reports whether the cache's history reaches back to rev, so that
// a watch from rev (ReadExact) is served from it rather than ended with a
// *storage.CompactedError.
func (c *Cache) Reaches(rev int64) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return rev >= c.ring.startRev
}

// heldValueBytes is the size of the values every running Cache of the
// process holds in its current state.
var heldValueBytes atomic.Int64

// HeldValueBytes returns the size of the objects' values that the running
// watch caches of this process hold in their current state: the bulk of an
// API server's live heap, as bytes the garbage collector does not scan
// (their older versions in the caches' histories are not counted).
func HeldValueBytes() int64 { return heldValueBytes.Load() }

// holdValues adds n bytes to the values c holds; c.mu is held.
func (c *Cache) holdValues(n int64) {
	c.valueBytes += n
	heldValueBytes.Add(n)
}
