package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/workqueue"
)

// Defaults for Options.
const (
	DefaultMaxRetries          = 15
	DefaultShutdownGracePeriod = 30 * time.Second
	// syncPollInterval is how often Run polls the HasSynced functions.
	syncPollInterval = 100 * time.Millisecond
)

// Options configure a Controller. Only the Reconciler given to New is
// required; every zero field has a default.
type Options struct {
	// Name labels logs and metrics (the controller label, and the work
	// queue's name label). Default "controller".
	Name string
	// Workers is how many keys are reconciled at once. Default 1. A key is
	// never reconciled by two workers at the same time.
	Workers int
	// RateLimiter spaces out retries. Default
	// workqueue.DefaultControllerRateLimiter.
	RateLimiter workqueue.RateLimiter[string]
	// MaxRetries is how many times a failing key is retried before it is
	// dropped (and logged). Zero means DefaultMaxRetries; negative means
	// no limit. The count restarts when the key reconciles cleanly.
	MaxRetries int
	// Logger receives the controller's logs. Default slog.Default().
	Logger *slog.Logger
	// Registerer, when set, receives the controller_* metrics and the
	// queue's workqueue_* metrics.
	Registerer prometheus.Registerer
	// HasSynced are the caches the reconciler reads; Run starts no worker
	// until all report true. Pass the HasSynced of the Registration of
	// the handler that feeds this controller (informer.Registration), not
	// the informer's: it also waits until the handler has enqueued the
	// initial list.
	HasSynced []func() bool
	// ShutdownGracePeriod is how long in-flight reconciles keep a live
	// context after Run's context ends; after it their context is
	// cancelled. Run waits for them to return either way. Zero means
	// DefaultShutdownGracePeriod; negative cancels them at once.
	ShutdownGracePeriod time.Duration
}

// Controller drains a work queue of keys into a Reconciler with a pool of
// workers, retrying failures with rate limiting. Create it with New, feed
// it with Enqueue (usually from informer event handlers) and run it with Run.
type Controller struct {
	name       string
	reconciler Reconciler
	queue      *workqueue.Queue[string]
	workers    int
	maxRetries int // negative: unlimited
	// failures counts each failing key's errors in a row: the queue's
	// NumRequeues also counts Result.Requeue, which is no failure.
	failuresMu sync.Mutex
	failures   map[string]int
	grace      time.Duration
	hasSynced  []func() bool
	log        *slog.Logger
	metrics    *metrics
	started    atomic.Bool
}

// New builds a controller. It starts nothing and fails only if the metrics
// cannot be registered.
func New(r Reconciler, opts Options) (*Controller, error) {
	c := &Controller{
		name:       opts.Name,
		reconciler: r,
		workers:    max(opts.Workers, 1),
		maxRetries: opts.MaxRetries,
		failures:   map[string]int{},
		grace:      opts.ShutdownGracePeriod,
		hasSynced:  opts.HasSynced,
		log:        opts.Logger,
	}
	if c.name == "" {
		c.name = "controller"
	}
	if c.maxRetries == 0 {
		c.maxRetries = DefaultMaxRetries
	}
	if c.grace == 0 {
		c.grace = DefaultShutdownGracePeriod
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("controller", c.name)
	var err error
	if c.metrics, err = newMetrics(opts.Registerer, c.name); err != nil {
		return nil, err
	}
	qcfg := workqueue.Config[string]{Name: c.name, RateLimiter: opts.RateLimiter}
	if opts.Registerer != nil {
		p, err := workqueue.NewPrometheusProvider(opts.Registerer)
		if err != nil {
			return nil, fmt.Errorf("controller %s: %w", c.name, err)
		}
		qcfg.Metrics = p
	}
	c.queue = workqueue.New(qcfg)
	return c, nil
}

// Enqueue asks for key to be reconciled. Keys already waiting are
// deduplicated; a key being reconciled is reconciled once more afterwards.
// Enqueue may be called before Run; it does nothing after Run returned.
func (c *Controller) Enqueue(key string) { c.queue.Add(key) }

// EnqueueAfter enqueues key once d has passed.
func (c *Controller) EnqueueAfter(key string, d time.Duration) { c.queue.AddAfter(key, d) }

// EnqueueLowPriority enqueues key behind every key enqueued by Enqueue,
// for periodic resyncs; see workqueue.Queue.AddLowPriority for the bound on
// its wait.
func (c *Controller) EnqueueLowPriority(key string) { c.queue.AddLowPriority(key) }

// Run waits until every HasSynced function reports true, then reconciles
// keys with Options.Workers workers until ctx ends. It then stops handing
// out keys, lets in-flight reconciles finish (see ShutdownGracePeriod),
// and returns nil once every goroutine it started has exited. If ctx ends
// before the caches sync it returns an error matching ErrNotSynced. A
// Controller runs once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	queueDone := make(chan error, 1)
	go func() { queueDone <- c.queue.Run(ctx) }() // delivers delayed retries
	defer func() {
		c.queue.ShutDown()
		<-queueDone
	}()

	if err := c.waitForSync(ctx); err != nil {
		return err
	}
	c.log.Info("starting workers", "workers", c.workers)

	// Reconciles get a context that outlives ctx by the grace period, so
	// a shutdown lets in-flight work finish instead of aborting it.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.processNextItem(workCtx) {
			}
		})
	}

	<-ctx.Done()
	c.log.Info("shutting down, waiting for in-flight reconciles")
	grace := time.AfterFunc(max(c.grace, 0), cancelWork)
	defer grace.Stop()
	c.queue.ShutDownWithDrain()
	wg.Wait()
	c.log.Info("stopped")
	return nil
}

// waitForSync polls the HasSynced functions until all are true.
func (c *Controller) waitForSync(ctx context.Context) error {
	if len(c.hasSynced) == 0 {
		return nil
	}
	tick := time.NewTicker(syncPollInterval)
	defer tick.Stop()
	for {
		if c.synced() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNotSynced, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

func (c *Controller) synced() bool {
	for _, f := range c.hasSynced {
		if !f() {
			return false
		}
	}
	return true
}
