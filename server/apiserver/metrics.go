package apiserver

import (
	"errors"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// serverGatherer is what /metrics serves: the server's own registry
// (Options.Registerer: requests, watches, the cache, storage) and
// Kubernetes' legacy registry, where kube's libraries running inside the
// server record theirs, as they do in kube-apiserver: the admission
// plugins' and webhooks' (pod_security_*, apiserver_admission_webhook_*),
// the CRD conversion webhooks' (apiserver_crd_conversion_webhook_*), the
// controllers' work queues (workqueue_*), CEL's, and kube's Go runtime and
// process collectors (go_*, process_*).
//
// A family both registries have is the server's: prometheus.Gatherers
// would fail the whole scrape on it (a program embedding the server may
// register its own Go collector, as the CLI once did).
type serverGatherer struct {
	own prometheus.Gatherer
}

func (g serverGatherer) Gather() ([]*dto.MetricFamily, error) {
	own, err := g.own.Gather()
	legacy, lerr := legacyregistry.DefaultGatherer.Gather()
	have := make(map[string]bool, len(own))
	for _, mf := range own {
		have[mf.GetName()] = true
	}
	for _, mf := range legacy {
		if !have[mf.GetName()] {
			own = append(own, mf)
		}
	}
	slices.SortFunc(own, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return own, errors.Join(err, lerr)
}
