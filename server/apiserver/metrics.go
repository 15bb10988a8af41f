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
// (Options.Registerer: requests, watches, the cache, storage, its
// controllers' work queues) and Kubernetes' legacy registry, where kube's
// libraries running inside the server record theirs, as they do in
// kube-apiserver: the admission plugins' and webhooks'
// (pod_security_*, apiserver_admission_webhook_*), the CRD conversion
// webhooks' (apiserver_crd_conversion_webhook_*), kube's own work queues
// (workqueue_*), CEL's, and kube's Go runtime and process collectors
// (go_*, process_*).
//
// A family both registries have is merged series by series: the server's
// own series, then the legacy registry's whose labels differ from all of
// them (the work queues: the server's controllers' and kube's, told apart
// by their name label). A legacy series with the labels of one of the
// server's, or a legacy family of another type, is left out:
// prometheus.Gatherers would fail the whole scrape on either (a program
// embedding the server may register its own Go collector).
//
// The legacy registry is the process's: several servers in one process
// (tests) each serve all of it.
type serverGatherer struct {
	own prometheus.Gatherer
}

func (g serverGatherer) Gather() ([]*dto.MetricFamily, error) {
	own, err := g.own.Gather()
	legacy, lerr := legacyregistry.DefaultGatherer.Gather()
	byName := make(map[string]*dto.MetricFamily, len(own))
	for _, mf := range own {
		byName[mf.GetName()] = mf
	}
	for _, mf := range legacy {
		mine, ok := byName[mf.GetName()]
		if !ok {
			own = append(own, mf)
			continue
		}
		if mine.GetType() != mf.GetType() {
			continue
		}
		seen := make(map[string]bool, len(mine.Metric))
		for _, m := range mine.Metric {
			seen[labelKey(m)] = true
		}
		for _, m := range mf.Metric {
			if k := labelKey(m); !seen[k] {
				seen[k] = true
				mine.Metric = append(mine.Metric, m)
			}
		}
	}
	slices.SortFunc(own, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return own, errors.Join(err, lerr)
}

// labelKey identifies a series within its family by its label pairs
// (which a gatherer returns sorted by name).
func labelKey(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		b.WriteString(l.GetName())
		b.WriteByte(0)
		b.WriteString(l.GetValue())
		b.WriteByte(0)
	}
	return b.String()
}
