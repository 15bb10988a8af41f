package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterShares(t *testing.T) {
	reg := prometheus.NewRegistry()
	newVec := func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"l"})
	}
	a, err := Register(reg, newVec())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Register(reg, newVec())
	if err != nil || a != b {
		t.Fatalf("second registration: %v, shared %v", err, a == b)
	}
	// Same name, other shape: an error, and a usable collector.
	g, err := Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x_total", Help: "x"}, []string{"m"}))
	if err == nil || g == nil {
		t.Fatalf("conflicting registration: %v", err)
	}
	if c, err := Register[*prometheus.CounterVec](nil, newVec()); err != nil || c == nil {
		t.Fatalf("nil registerer: %v", err)
	}
}
