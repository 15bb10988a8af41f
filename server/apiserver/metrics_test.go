package apiserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestMetricsServeKubeRegistry: /metrics serves the server's own metrics
// and those kube's libraries record inside it, in kube's legacy
// registry, as kube-apiserver's /metrics does: the PodSecurity plugin's
// evaluations, the controllers' work queues, kube's Go runtime and
// process collectors. A family in both registries (an embedding program
// registered its own Go collector) is served once, from the server's
// registry, and the scrape does not fail.
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
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	// The text parser refuses a family that appears twice.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	for _, name := range []string{
		"apiserver_request_total",        // the server's own
		"pod_security_evaluations_total", // kube's PodSecurity plugin
		"workqueue_adds_total",           // kube's controllers' queues
		"process_resident_memory_bytes",  // kube's process collector (reg has none)
		"go_goroutines",                  // in both: served once, the server's
	} {
		if _, ok := families[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	var evaluated float64
	for _, m := range families["pod_security_evaluations_total"].GetMetric() {
		evaluated += m.GetCounter().GetValue()
	}
	if evaluated == 0 {
		t.Error("pod_security_evaluations_total counted no evaluation of the pod's create")
	}
}
