package garbagecollector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/promreg"
)

// metrics are the collector's own series; its queues and reconciles are
// counted by the controller package (controller_*, workqueue_* under the
// names of kube's queues), its informers by the informer package.
type metrics struct {
	syncErrors prometheus.Counter     // kube's garbagecollector_controller_resources_sync_error_total
	deletions  *prometheus.CounterVec // by propagation policy
	monitors   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, graphNodes func() float64) (*metrics, error) {
	m := &metrics{
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "garbagecollector_controller_resources_sync_error_total",
			Help: "Number of garbage collector resources sync errors",
		}),
		deletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garbagecollector_controller_deletions_total",
			Help: "Objects the garbage collector deleted, by propagation policy.",
		}, []string{"propagation_policy"}),
		monitors: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "garbagecollector_controller_monitored_resources",
			Help: "Resources the garbage collector lists and watches.",
		}),
	}
	nodes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "garbagecollector_controller_graph_nodes",
		Help: "Objects in the garbage collector's ownership graph, virtual owners included.",
	}, graphNodes)
	if reg == nil {
		return m, nil
	}
	var err error
	if m.syncErrors, err = promreg.Register(reg, m.syncErrors); err != nil {
		return nil, fmt.Errorf("garbagecollector: registering metrics: %w", err)
	}
	if m.deletions, err = promreg.Register(reg, m.deletions); err != nil {
		return nil, fmt.Errorf("garbagecollector: registering metrics: %w", err)
	}
	if m.monitors, err = promreg.Register(reg, m.monitors); err != nil {
		return nil, fmt.Errorf("garbagecollector: registering metrics: %w", err)
	}
	// A second collector on the same Registerer keeps the first one's
	// graph gauge: gauges of two graphs cannot share one series.
	if _, err := promreg.Register(reg, nodes); err != nil {
		return nil, fmt.Errorf("garbagecollector: registering metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) deleted(policy string) { m.deletions.WithLabelValues(policy).Inc() }
