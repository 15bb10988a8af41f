package server

import "github.com/prometheus/client_golang/prometheus"

// metrics are the server's own; request metrics belong to the filters
// around Handler.
type metrics struct {
	resources prometheus.GaugeFunc
	// listRuns counts the runs of unchanged objects spliced into gzipped
	// lists (listgzip.go), by whether their compressed bytes were reused
	// or compressed for this list.
	listRuns *prometheus.CounterVec
}

// newMetrics registers the server's metrics on reg, if any.
func newMetrics(reg prometheus.Registerer, r *registry) (*metrics, error) {
	m := &metrics{
		resources: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "listwatch", Subsystem: "apiserver", Name: "served_resources",
			Help: "Number of group/version/resources served, built-in and custom.",
		}, func() float64 { return float64(len(r.all())) }),
		listRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "listwatch", Subsystem: "apiserver", Name: "list_gzip_runs_total",
			Help: "Runs of objects spliced into gzip-compressed LIST responses, by whether their compressed bytes were reused from an earlier list or compressed now.",
		}, []string{"result"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.resources, m.listRuns} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
