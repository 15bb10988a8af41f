package workqueue

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns the value of each series of reg for queue name, by metric
// name; histograms give their sample count.
func gather(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if !hasLabel(m, "name", name) {
				continue
			}
			switch {
			case m.Counter != nil:
				out[f.GetName()] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[f.GetName()] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[f.GetName()] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

func TestPrometheusMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		p, err := NewPrometheusProvider(reg)
		if err != nil {
			t.Fatal(err)
		}
		// A second provider on the same registry shares the metrics.
		p2, err := NewPrometheusProvider(reg)
		if err != nil {
			t.Fatalf("second provider: %v", err)
		}
		q := New(Config[string]{Name: "pods", Metrics: p})
		other := New(Config[string]{Name: "nodes", Metrics: p2})
		other.Add("n")

		q.Add("a")
		q.Add("a") // deduplicated: not an add
		q.Add("b")
		time.Sleep(time.Second)
		a, _ := q.Get()
		time.Sleep(3 * time.Second)
		q.AddRateLimited("c") // counts a retry; Run is not running
		// As client-go's: every AddAfter counts a retry, and an item
		// added again while it is processed counts in the depth.
		q.AddAfter("d", 0)
		q.AddAfter("e", time.Hour)
		q.Add("a")

		got := gather(t, reg, "pods")
		want := map[string]float64{
			"workqueue_adds_total":                        4,
			"workqueue_depth":                             3, // b, d, a
			"workqueue_queue_duration_seconds":            1,
			"workqueue_work_duration_seconds":             0,
			"workqueue_retries_total":                     3,
			"workqueue_unfinished_work_seconds":           3,
			"workqueue_longest_running_processor_seconds": 3,
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s = %v, want %v", k, got[k], w)
			}
		}
		q.Done(a)
		got = gather(t, reg, "pods")
		if got["workqueue_work_duration_seconds"] != 1 || got["workqueue_unfinished_work_seconds"] != 0 {
			t.Errorf("after Done: %v", got)
		}
		if n := gather(t, reg, "nodes")["workqueue_depth"]; n != 1 {
			t.Errorf("nodes depth = %v, want 1", n)
		}
	})
}
