package informer

import (
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/promreg"
)

// PrometheusProvider is a MetricsProvider exporting the reflector metrics
// client-go's reflector defined (under the same names), plus relists by
// reason and the informers' queue gauges, labelled by reflector name
// (ReflectorOptions.Name):
//
//	reflector_lists_total                       counter    LIST requests (one per page)
//	reflector_list_duration_seconds             histogram  per LIST request
//	reflector_items_per_list                    histogram  items per LIST page
//	reflector_watches_total                     counter    watches opened or attempted
//	reflector_short_watches_total               counter    clean ends within 1s, no event
//	reflector_watch_duration_seconds            histogram
//	reflector_items_per_watch                   histogram  events per watch
//	reflector_relists_total{reason}             counter    see RelistReason
//	reflector_last_resource_version             gauge      LastSyncResourceVersion, when numeric
//	informer_queued_items                       gauge      keys waiting in the delta queue
//	informer_handler_queue_depth                gauge      notifications buffered for all handlers
//	informer_handler_max_queue_depth            gauge      the largest one handler's backlog
//
// The gauges are computed when scraped. Reflectors and informers are held
// by name until the provider is dropped; a second one with the same name
// replaces the first in the gauges and shares its counters.
type PrometheusProvider struct {
	lists, watches, shortWatches, relists *prometheus.CounterVec
	listDur, listItems                    *prometheus.HistogramVec
	watchDur, watchItems                  *prometheus.HistogramVec
	gauges                                *informerGauges
}

// NewPrometheusProvider creates the metrics and registers them on reg (nil:
// nowhere). If another provider already registered them on reg, this one
// shares them.
func NewPrometheusProvider(reg prometheus.Registerer) (*PrometheusProvider, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "reflector", Name: name, Help: help},
			append([]string{"name"}, labels...))
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "reflector", Name: name, Help: help,
			Buckets: buckets}, []string{"name"})
	}
	seconds := prometheus.ExponentialBuckets(0.005, 4, 10) // 5ms to about 22 minutes
	items := prometheus.ExponentialBuckets(1, 4, 10)       // 1 to 262144
	p := &PrometheusProvider{
		lists:        counter("lists_total", "Total number of LIST requests (pages) made by reflectors"),
		watches:      counter("watches_total", "Total number of watches made by reflectors"),
		shortWatches: counter("short_watches_total", "Total number of watches that ended cleanly within a second without an event"),
		relists: counter("relists_total", "Total number of times a reflector left its watch to list again, by reason",
			"reason"),
		listDur:    histogram("list_duration_seconds", "How long a LIST request took", seconds),
		listItems:  histogram("items_per_list", "How many items a LIST page returned", items),
		watchDur:   histogram("watch_duration_seconds", "How long a watch lasted", seconds),
		watchItems: histogram("items_per_watch", "How many events a watch delivered", items),
		gauges:     newInformerGauges(),
	}
	var err error
	for _, c := range []**prometheus.CounterVec{&p.lists, &p.watches, &p.shortWatches, &p.relists} {
		if *c, err = register(reg, *c); err != nil {
			return nil, err
		}
	}
	for _, h := range []**prometheus.HistogramVec{&p.listDur, &p.listItems, &p.watchDur, &p.watchItems} {
		if *h, err = register(reg, *h); err != nil {
			return nil, err
		}
	}
	if p.gauges, err = register(reg, p.gauges); err != nil {
		return nil, err
	}
	return p, nil
}

// register shares collectors with other providers on the same Registerer.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promreg.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("informer: registering metrics: %w", err)
	}
	return c, nil
}

// NewReflectorMetrics implements MetricsProvider.
func (p *PrometheusProvider) NewReflectorMetrics(name string, snapshot func() ReflectorSnapshot) ReflectorMetrics {
	p.gauges.setReflector(name, snapshot)
	return &promReflectorMetrics{
		name:         name,
		lists:        p.lists.WithLabelValues(name),
		watches:      p.watches.WithLabelValues(name),
		shortWatches: p.shortWatches.WithLabelValues(name),
		relists:      p.relists,
		listDur:      p.listDur.WithLabelValues(name),
		listItems:    p.listItems.WithLabelValues(name),
		watchDur:     p.watchDur.WithLabelValues(name),
		watchItems:   p.watchItems.WithLabelValues(name),
	}
}

// NewInformerMetrics implements MetricsProvider.
func (p *PrometheusProvider) NewInformerMetrics(name string, snapshot func() InformerSnapshot) {
	p.gauges.setInformer(name, snapshot)
}

type promReflectorMetrics struct {
	name                         string
	lists, watches, shortWatches prometheus.Counter
	relists                      *prometheus.CounterVec
	listDur, listItems           prometheus.Observer
	watchDur, watchItems         prometheus.Observer
}

func (m *promReflectorMetrics) Listed(items int, d time.Duration, err error) {
	m.lists.Inc()
	m.listDur.Observe(d.Seconds())
	if err == nil {
		m.listItems.Observe(float64(items))
	}
}

func (m *promReflectorMetrics) Watched(events int, d time.Duration, short bool, err error) {
	m.watches.Inc()
	m.watchDur.Observe(d.Seconds())
	m.watchItems.Observe(float64(events))
	if short {
		m.shortWatches.Inc()
	}
}

func (m *promReflectorMetrics) Relisted(reason RelistReason) {
	m.relists.WithLabelValues(m.name, string(reason)).Inc()
}

// informerGauges computes the gauges of every reflector and informer at
// scrape time, so no goroutine has to refresh them.
type informerGauges struct {
	lastRV, queued, depth, maxDepth *prometheus.Desc

	mu         sync.Mutex
	reflectors map[string]func() ReflectorSnapshot // guarded by mu
	informers  map[string]func() InformerSnapshot  // guarded by mu
}

func newInformerGauges() *informerGauges {
	name := []string{"name"}
	return &informerGauges{
		lastRV: prometheus.NewDesc("reflector_last_resource_version",
			"Last resource version seen by the reflector (when it is a number)", name, nil),
		queued: prometheus.NewDesc("informer_queued_items",
			"Number of keys waiting in the informer's delta queue", name, nil),
		depth: prometheus.NewDesc("informer_handler_queue_depth",
			"Number of notifications buffered for the informer's handlers, all handlers together", name, nil),
		maxDepth: prometheus.NewDesc("informer_handler_max_queue_depth",
			"Largest number of notifications buffered for one of the informer's handlers", name, nil),
		reflectors: map[string]func() ReflectorSnapshot{},
		informers:  map[string]func() InformerSnapshot{},
	}
}

func (g *informerGauges) setReflector(name string, f func() ReflectorSnapshot) {
	g.mu.Lock()
	g.reflectors[name] = f
	g.mu.Unlock()
}

func (g *informerGauges) setInformer(name string, f func() InformerSnapshot) {
	g.mu.Lock()
	g.informers[name] = f
	g.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (g *informerGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.lastRV
	ch <- g.queued
	ch <- g.depth
	ch <- g.maxDepth
}

// Collect implements prometheus.Collector.
func (g *informerGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	refs, infs := maps.Clone(g.reflectors), maps.Clone(g.informers)
	g.mu.Unlock()
	// Snapshots take the components' locks; never hold g.mu meanwhile.
	for name, f := range refs {
		rv, err := strconv.ParseUint(f().LastSyncResourceVersion, 10, 64)
		if err != nil {
			continue // none yet, or not a number: no sample
		}
		ch <- prometheus.MustNewConstMetric(g.lastRV, prometheus.GaugeValue, float64(rv), name)
	}
	for name, f := range infs {
		s := f()
		ch <- prometheus.MustNewConstMetric(g.queued, prometheus.GaugeValue, float64(s.QueueDepth), name)
		ch <- prometheus.MustNewConstMetric(g.depth, prometheus.GaugeValue, float64(s.HandlerQueueDepth), name)
		ch <- prometheus.MustNewConstMetric(g.maxDepth, prometheus.GaugeValue, float64(s.MaxHandlerQueueDepth), name)
	}
}

var _ MetricsProvider = (*PrometheusProvider)(nil)
