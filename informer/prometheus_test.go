package informer_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/listwatch/listwatch/informer"
)

// series returns the value of every series of reg whose labels include
// want, keyed by metric name (and the reason label, if any); histograms
// give their sample count.
func series(t *testing.T, reg *prometheus.Registry, want map[string]string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
	metrics:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			key := f.GetName()
			if r, ok := labels["reason"]; ok {
				key += "{" + r + "}"
			}
			out[key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// blocker is a handler that blocks in OnAdd until released.
type blocker struct{ release chan struct{} }

func (b blocker) OnAdd(U, bool)    { <-b.release }
func (b blocker) OnUpdate(_, _ U)  {}
func (b blocker) OnDelete(U, bool) {}

func TestPrometheusMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := informer.NewPrometheusProvider(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := informer.NewPrometheusProvider(reg); err != nil {
		t.Fatalf("a second provider on the same registry: %v", err)
	}
	srv := newFakeServer()
	seed(srv, 12)
	ro := fastOpts(false, 5)
	ro.Metrics = p
	h := startHarness(t, srv, ro)
	h.mustConverge()

	got := series(t, reg, map[string]string{"name": "test"})
	if got["reflector_lists_total"] != 3 || got["reflector_items_per_list"] != 3 {
		t.Fatalf("after one paged list of 12 items by 5: %v", got)
	}
	rv, _ := strconv.ParseFloat(h.inf.LastSyncResourceVersion(), 64)
	if got["reflector_last_resource_version"] != rv {
		t.Fatalf("reflector_last_resource_version %v, want %v", got["reflector_last_resource_version"], rv)
	}

	// A 410 ERROR event: one relist, reason expired.
	srv.endWatches(gone())
	srv.upsert("ns", "new", nil)
	h.mustConverge()
	got = series(t, reg, map[string]string{"name": "test"})
	if got["reflector_relists_total{expired}"] != 1 || got["reflector_lists_total"] != 6 || got["reflector_watches_total"] < 1 {
		t.Fatalf("after a 410: %v", got)
	}

	// A handler stuck in OnAdd: its backlog shows in the depth gauges.
	b := blocker{release: make(chan struct{})}
	if _, err := h.inf.AddEventHandler(b, informer.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = series(t, reg, map[string]string{"name": "test"})
		// 13 initial adds, one of them being handled.
		if got["informer_handler_max_queue_depth"] == 13 && got["informer_handler_queue_depth"] >= 13 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handler backlog not reported: %v", got)
		}
		time.Sleep(time.Millisecond) // polling a real condition, with a deadline
	}
	close(b.release)
}
