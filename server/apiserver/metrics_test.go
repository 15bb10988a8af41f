package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestMetricsServeKubeRegistry: /metrics serves the server's own metrics
// and those kube's libraries record inside it, in kube's legacy
// registry, as kube-apiserver's /metrics does: the PodSecurity plugin's
// evaluations, kube's work queues beside the server's controllers' in
// one family, kube's Go runtime and process collectors. A family in both
// registries is merged series by series: a series in both (an embedding
// program registered its own Go collector) is served once, from the
// server's registry, and the scrape does not fail.
func TestMetricsServeKubeRegistry(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	srv := apiservertest.Start(t, "", apiservertest.WithControllers, func(o *apiserver.Options) { o.Registerer = reg })
	cs := clientset(t, srv)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var families map[string]*dto.MetricFamily
	// The server's controllers start once it is ready: poll for their
	// queues (30 s is a deadline, not a synchronisation).
	queues := func() (ours, kubes bool) {
		for _, m := range families["workqueue_adds_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() != "name":
				case l.GetValue() == "garbage_collector_attempt_to_delete": // the server's garbage collector
					ours = true
				case l.GetValue() == "cluster_authentication_trust_controller": // kube's, in its legacy registry
					kubes = true
				}
			}
		}
		return ours, kubes
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("GET /metrics: %w", err)
		}
		// The text parser refuses a family that appears twice (not a
		// series twice in one family: go_goroutines is counted below).
		parser := expfmt.NewTextParser(model.UTF8Validation)
		if families, err = parser.TextToMetricFamilies(strings.NewReader(string(body))); err != nil {
			return false, fmt.Errorf("/metrics does not parse: %w", err)
		}
		ours, kubes := queues()
		return ours && kubes, nil
	}); err != nil {
		ours, kubes := queues()
		t.Fatalf("workqueue_adds_total: the server's queue %v, kube's %v: %v", ours, kubes, err)
	}
	for _, name := range []string{
		"apiserver_request_total",        // the server's own
		"pod_security_evaluations_total", // kube's PodSecurity plugin
		"process_resident_memory_bytes",  // kube's process collector (reg has none)
		"go_goroutines",                  // in both: served once, the server's
	} {
		if _, ok := families[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	// Both registries have a Go collector: one go_goroutines series.
	if n := len(families["go_goroutines"].GetMetric()); n != 1 {
		t.Errorf("go_goroutines: %d series, want 1", n)
	}
	var evaluated float64
	for _, m := range families["pod_security_evaluations_total"].GetMetric() {
		evaluated += m.GetCounter().GetValue()
	}
	if evaluated == 0 {
		t.Error("pod_security_evaluations_total counted no evaluation (of the pod's create)")
	}
}
