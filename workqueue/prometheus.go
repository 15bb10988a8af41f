package workqueue

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/promreg"
)

// PrometheusProvider is a MetricsProvider exporting client-go's workqueue
// metrics, labelled by queue name:
//
//	workqueue_depth                              gauge
//	workqueue_adds_total                         counter
//	workqueue_queue_duration_seconds             histogram
//	workqueue_work_duration_seconds              histogram
//	workqueue_retries_total                      counter
//	workqueue_unfinished_work_seconds            gauge
//	workqueue_longest_running_processor_seconds  gauge
//
// The three gauges are computed from each queue when scraped. Queues are
// held by name until the provider is dropped; a second queue with the same
// name replaces the first in the gauges and shares its counters.
type PrometheusProvider struct {
	adds, retries           *prometheus.CounterVec
	queueLatency, workTimes *prometheus.HistogramVec
	gauges                  *gaugeCollector
}

// NewPrometheusProvider creates the metrics and registers them on reg. If
// another provider already registered them on reg, this one shares them.
func NewPrometheusProvider(reg prometheus.Registerer) (*PrometheusProvider, error) {
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 10) // as client-go
	p := &PrometheusProvider{
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by workqueue",
		}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of retries handled by workqueue",
		}, []string{"name"}),
		queueLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long in seconds an item stays in workqueue before being requested.",
			Buckets: buckets,
		}, []string{"name"}),
		workTimes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long in seconds processing an item from workqueue takes.",
			Buckets: buckets,
		}, []string{"name"}),
		gauges: newGaugeCollector(),
	}
	var err error
	p.adds, err = register(reg, p.adds)
	if err == nil {
		p.retries, err = register(reg, p.retries)
	}
	if err == nil {
		p.queueLatency, err = register(reg, p.queueLatency)
	}
	if err == nil {
		p.workTimes, err = register(reg, p.workTimes)
	}
	if err == nil {
		p.gauges, err = register(reg, p.gauges)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// register shares collectors with other queues on the same Registerer.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promreg.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("workqueue: registering metrics: %w", err)
	}
	return c, nil
}

// NewQueueMetrics implements MetricsProvider.
func (p *PrometheusProvider) NewQueueMetrics(name string, snapshot func() Snapshot) QueueMetrics {
	p.gauges.set(name, snapshot)
	return &promQueueMetrics{
		adds:         p.adds.WithLabelValues(name),
		retries:      p.retries.WithLabelValues(name),
		queueLatency: p.queueLatency.WithLabelValues(name),
		workTimes:    p.workTimes.WithLabelValues(name),
	}
}

type promQueueMetrics struct {
	adds, retries           prometheus.Counter
	queueLatency, workTimes prometheus.Observer
}

func (m *promQueueMetrics) Added()                   { m.adds.Inc() }
func (m *promQueueMetrics) Retried()                 { m.retries.Inc() }
func (m *promQueueMetrics) Started(d time.Duration)  { m.queueLatency.Observe(d.Seconds()) }
func (m *promQueueMetrics) Finished(d time.Duration) { m.workTimes.Observe(d.Seconds()) }

// gaugeCollector computes the depth and unfinished-work gauges of every
// queue at scrape time, so no goroutine has to refresh them.
type gaugeCollector struct {
	depth, unfinished, longest *prometheus.Desc

	mu     sync.Mutex
	queues map[string]func() Snapshot // guarded by mu
}

func newGaugeCollector() *gaugeCollector {
	return &gaugeCollector{
		depth: prometheus.NewDesc("workqueue_depth",
			"Current depth of workqueue", []string{"name"}, nil),
		unfinished: prometheus.NewDesc("workqueue_unfinished_work_seconds",
			"How many seconds of work has done that is in progress and hasn't been observed by work_duration. "+
				"Large values indicate stuck threads. One can deduce the number of stuck threads by observing "+
				"the rate at which this increases.", []string{"name"}, nil),
		longest: prometheus.NewDesc("workqueue_longest_running_processor_seconds",
			"How many seconds has the longest running processor for workqueue been running.",
			[]string{"name"}, nil),
		queues: make(map[string]func() Snapshot),
	}
}

func (g *gaugeCollector) set(name string, snapshot func() Snapshot) {
	g.mu.Lock()
	g.queues[name] = snapshot
	g.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (g *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.depth
	ch <- g.unfinished
	ch <- g.longest
}

// Collect implements prometheus.Collector.
func (g *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	queues := make(map[string]func() Snapshot, len(g.queues))
	for name, f := range g.queues {
		queues[name] = f
	}
	g.mu.Unlock()
	// Snapshots take each queue's lock; never hold g.mu while doing so.
	for name, f := range queues {
		s := f()
		ch <- prometheus.MustNewConstMetric(g.depth, prometheus.GaugeValue, float64(s.Depth), name)
		ch <- prometheus.MustNewConstMetric(g.unfinished, prometheus.GaugeValue, s.Unfinished.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(g.longest, prometheus.GaugeValue, s.Longest.Seconds(), name)
	}
}

var _ MetricsProvider = (*PrometheusProvider)(nil)
