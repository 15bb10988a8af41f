package etcd

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/promreg"

	"github.com/listwatch/listwatch/server/storage"
)

// metrics are the request metrics kube-apiserver keeps for etcd, plus a
// result label on the counter.
type metrics struct {
	duration *prometheus.HistogramVec
	requests *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "etcd_request_duration_seconds",
			Help: "Etcd request latency in seconds for each operation and object type.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
				4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"operation", "type"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_requests_total",
			Help: "Etcd requests by operation, object type and result.",
		}, []string{"operation", "type", "result"}),
	}
	if r != nil {
		// A conflicting collector leaves ours unregistered but working.
		m.duration, _ = promreg.Register(r, m.duration)
		m.requests, _ = promreg.Register(r, m.requests)
	}
	return m
}

func (m *metrics) observe(op, typ string, d time.Duration, err error) {
	m.duration.WithLabelValues(op, typ).Observe(d.Seconds())
	m.requests.WithLabelValues(op, typ, result(err)).Inc()
}

// result names an outcome with bounded cardinality.
func result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, storage.ErrNotFound):
		return "not_found"
	case errors.Is(err, storage.ErrExists):
		return "exists"
	case errors.Is(err, storage.ErrConflict):
		return "conflict"
	case errors.Is(err, storage.ErrCompacted):
		return "compacted"
	default:
		return "error"
	}
}
