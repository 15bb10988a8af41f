package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/run"
)

// Defaults for Config.
const (
	DefaultWorkers            = 20 // kube-controller-manager's --concurrent-gc-syncs
	DefaultDiscoveryPeriod    = 30 * time.Second
	DefaultInitialSyncTimeout = 30 * time.Second
)

// ErrAlreadyRunning is returned by a second Run of the same Controller.
var ErrAlreadyRunning = errors.New("garbagecollector: already running")

// ErrConfig wraps every error about an invalid Config.
var ErrConfig = errors.New("garbagecollector: invalid config")

// Config configures a Controller. Client is required; every other zero
// field has a default.
type Config struct {
	// Client talks to the API server: discovery, lists and watches of
	// every monitored resource, and the collector's reads and writes.
	Client *client.Client
	// Logger receives the collector's logs. Nil: slog.Default().
	Logger *slog.Logger
	// Registerer receives the metrics (see the package doc). Nil: none.
	Registerer prometheus.Registerer
	// Workers is how many items each of the two queues works on at once.
	// Zero: DefaultWorkers.
	Workers int
	// DiscoveryPeriod is how often discovery is read again to find
	// resources to monitor; CRD changes trigger a read at once as well.
	// Zero: DefaultDiscoveryPeriod.
	DiscoveryPeriod time.Duration
	// InitialSyncTimeout bounds the wait for every monitor's first list
	// before the workers start; they start anyway after it, as kube's.
	// Zero: DefaultInitialSyncTimeout.
	InitialSyncTimeout time.Duration
}

// Controller is the garbage collector. Build it with New, run it with Run.
type Controller struct {
	cfg    Config
	client *client.Client
	log    *slog.Logger

	graph   *graph
	absent  *referenceCache
	mapper  *restMapper
	metrics *metrics
	// informerMetrics is shared by every monitor's informer.
	informerMetrics informer.MetricsProvider

	deleteCtl *controller.Controller // keys: uids
	orphanCtl *controller.Controller // keys: uids
	// enqueueDelete and enqueueOrphan feed the two queues (tests record
	// them instead).
	enqueueDelete, enqueueOrphan func(uid string)

	// group runs every goroutine; monitors join it while it runs.
	group   run.Group
	running atomic.Bool
	// discovered: a discovery has been read and the monitors set up;
	// ready: the initial sync is over (or timed out), workers may start.
	discovered atomic.Bool
	ready      atomic.Bool
	// warnings are Events waiting to be written by runEvents.
	warnings chan warning
	// crdBacked are the group/resources CRDs have served; only the
	// discovery goroutine uses it.
	crdBacked map[[2]string]bool
	// kick asks the discovery loop for a read now (buffer 1: coalesced).
	kick chan struct{}

	monitorsMu sync.Mutex
	monitors   map[client.GroupVersionResource]*monitor // guarded by monitorsMu
}

// New builds a garbage collector. It starts nothing.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: Client is required", ErrConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.DiscoveryPeriod <= 0 {
		cfg.DiscoveryPeriod = DefaultDiscoveryPeriod
	}
	if cfg.InitialSyncTimeout <= 0 {
		cfg.InitialSyncTimeout = DefaultInitialSyncTimeout
	}
	c := &Controller{
		cfg:       cfg,
		client:    cfg.Client,
		log:       cfg.Logger.With("controller", "garbagecollector"),
		graph:     newGraph(),
		absent:    newReferenceCache(absentOwnerCacheSize),
		mapper:    &restMapper{},
		kick:      make(chan struct{}, 1),
		crdBacked: map[[2]string]bool{},
		warnings:  make(chan warning, eventBuffer),
		monitors:  map[client.GroupVersionResource]*monitor{},
	}
	var err error
	if c.metrics, err = newMetrics(cfg.Registerer, func() float64 { return float64(c.graph.len()) }); err != nil {
		return nil, err
	}
	if cfg.Registerer != nil {
		p, err := informer.NewPrometheusProvider(cfg.Registerer)
		if err != nil {
			return nil, fmt.Errorf("garbagecollector: %w", err)
		}
		c.informerMetrics = p
	}
	opts := func(name string) controller.Options {
		return controller.Options{
			Name:       name,
			Workers:    cfg.Workers,
			MaxRetries: -1, // as kube's queues: an item is retried until it succeeds
			Logger:     c.log,
			Registerer: cfg.Registerer,
			HasSynced:  []func() bool{c.ready.Load},
			// Every step is idempotent and re-derived from the server:
			// nothing is lost by cutting an API call short.
			ShutdownGracePeriod: -1,
		}
	}
	if c.deleteCtl, err = controller.New(controller.ReconcilerFunc(c.attemptToDelete), opts("garbage_collector_attempt_to_delete")); err != nil {
		return nil, err
	}
	if c.orphanCtl, err = controller.New(controller.ReconcilerFunc(c.attemptToOrphan), opts("garbage_collector_attempt_to_orphan")); err != nil {
		return nil, err
	}
	c.enqueueDelete, c.enqueueOrphan = c.deleteCtl.Enqueue, c.orphanCtl.Enqueue
	return c, nil
}

// Run collects garbage until ctx ends, then returns after every goroutine
// it started (monitors, workers, discovery) has ended. A Controller runs
// once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	c.log.Info("starting controller")
	defer c.log.Info("shutting down controller")
	c.group.Go("discovery", c.runDiscovery)
	c.group.Go("initial sync", c.waitForInitialSync)
	c.group.Go("events", c.runEvents)
	c.group.Go("attempt to delete", c.deleteCtl.Run)
	c.group.Go("attempt to orphan", c.orphanCtl.Run)
	return c.group.Run(ctx)
}

// IsSynced reports whether discovery has been read and every monitor has
// listed its resource into the graph.
func (c *Controller) IsSynced() bool { return c.discovered.Load() && c.monitorsSynced() }

// signalDiscovery asks for a discovery read now.
func (c *Controller) signalDiscovery() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// waitForInitialSync lets the workers start once the graph holds every
// monitored resource, or after InitialSyncTimeout: the workers verify
// everything with the server, so an unsynced monitor delays, never
// misleads, them.
func (c *Controller) waitForInitialSync(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, c.cfg.InitialSyncTimeout)
	defer cancel()
	if informer.WaitForCacheSync(sctx, c.IsSynced) {
		c.log.Info("all resource monitors have synced")
	} else if ctx.Err() == nil {
		c.log.Info("not all resource monitors could be synced, proceeding anyway")
	}
	c.ready.Store(true)
	return nil
}
