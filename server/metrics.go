package server

import "github.com/prometheus/client_golang/prometheus"

// metrics are the server's own gauges; request metrics belong to the
// filters around Handler.
type metrics struct {
	resources prometheus.GaugeFunc
}

// newMetrics registers a gauge of served resources on reg, if any.
func newMetrics(reg prometheus.Registerer, r *registry) (*metrics, error) {
	m := &metrics{resources: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "listwatch", Subsystem: "apiserver", Name: "served_resources",
		Help: "Number of group/version/resources served, built-in and custom.",
	}, func() float64 { return float64(len(r.all())) })}
	if reg != nil {
		if err := reg.Register(m.resources); err != nil {
			return nil, err
		}
	}
	return m, nil
}
