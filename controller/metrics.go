package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/promreg"
)

// Reconcile outcomes, the values of the result label.
const (
	resultSuccess      = "success"
	resultError        = "error"
	resultTerminal     = "terminal_error"
	resultRequeue      = "requeue"
	resultRequeueAfter = "requeue_after"
	resultPanic        = "panic"
)

// metrics are one controller's series; the vectors are shared by every
// controller registered on the same Registerer.
type metrics struct {
	total    *prometheus.CounterVec // by result
	panics   prometheus.Counter
	duration prometheus.Observer
}

func newMetrics(reg prometheus.Registerer, name string) (*metrics, error) {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "controller_reconcile_total",
		Help: "Total number of reconciliations per controller, by result.",
	}, []string{"controller", "result"})
	panics := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "controller_reconcile_panics_total",
		Help: "Total number of reconciliations per controller that panicked.",
	}, []string{"controller"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "controller_reconcile_duration_seconds",
		Help:    "Time taken by one reconciliation, per controller.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"controller"})
	if reg != nil {
		var err error
		if total, err = register(reg, total); err != nil {
			return nil, err
		}
		if panics, err = register(reg, panics); err != nil {
			return nil, err
		}
		if duration, err = register(reg, duration); err != nil {
			return nil, err
		}
	}
	// Pre-create the series so dashboards see zeros, not absences.
	for _, r := range []string{resultSuccess, resultError, resultTerminal, resultRequeue, resultRequeueAfter, resultPanic} {
		total.WithLabelValues(name, r)
	}
	return &metrics{
		total:    total.MustCurryWith(prometheus.Labels{"controller": name}),
		panics:   panics.WithLabelValues(name),
		duration: duration.WithLabelValues(name),
	}, nil
}

// register shares collectors with other controllers on the same Registerer.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promreg.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("controller: registering metrics: %w", err)
	}
	return c, nil
}
