package cache

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/promreg"
)

// metrics are one cache's children of the shared metric vectors. Many
// caches (one per resource, CRDs coming and going) register on the same
// Registerer, so the vectors are registered once and each cache takes its
// resource label, deleting it when its Run returns.
type metrics struct {
	objects, revision, watchers prometheus.Gauge
	received, dispatched        prometheus.Counter
	slowClosed, fallbacks       prometheus.Counter
	readWait                    prometheus.Observer

	vecs     []interface{ DeleteLabelValues(...string) bool }
	resource string
}

func newMetrics(reg prometheus.Registerer, resource string) *metrics {
	label := []string{"resource"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, label))
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, label))
	}
	objects := gauge("watch_cache_objects", "Objects held by the watch cache.")
	revision := gauge("watch_cache_resource_version", "Latest revision the watch cache has seen.")
	watchers := gauge("watch_cache_watchers", "Open watches served by the watch cache.")
	received := counter("watch_cache_events_received_total", "Events the watch cache received from storage.")
	dispatched := counter("watch_cache_events_dispatched_total", "Events the watch cache delivered to watchers.")
	slow := counter("watch_cache_slow_watchers_closed_total", "Watchers closed because they fell too far behind.")
	fallbacks := counter("watch_cache_consistent_read_fallbacks_total", "Consistent reads served from storage because the cache was not fresh in time.")
	wait := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "watch_cache_consistent_read_wait_seconds",
		Help:    "Time a consistent read waited for the watch cache to catch up.",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	}, label))
	return &metrics{
		objects:    objects.WithLabelValues(resource),
		revision:   revision.WithLabelValues(resource),
		watchers:   watchers.WithLabelValues(resource),
		received:   received.WithLabelValues(resource),
		dispatched: dispatched.WithLabelValues(resource),
		slowClosed: slow.WithLabelValues(resource),
		fallbacks:  fallbacks.WithLabelValues(resource),
		readWait:   wait.WithLabelValues(resource),
		vecs:       []interface{ DeleteLabelValues(...string) bool }{objects, revision, watchers, received, dispatched, slow, fallbacks, wait},
		resource:   resource,
	}
}

// register is promreg.Register that keeps a conflicting, differently
// shaped collector's replacement unregistered rather than fail the cache.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	c, _ = promreg.Register(reg, c)
	return c
}

// forget removes this cache's series, for a resource that goes away.
func (m *metrics) forget() {
	for _, v := range m.vecs {
		v.DeleteLabelValues(m.resource)
	}
}
