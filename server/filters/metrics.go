package filters

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/internal/promreg"

	"github.com/listwatch/listwatch/server/request"
)

// RequestMetrics are kube-apiserver's request metrics, by the same names,
// with the labels verb, resource (and code):
//
//	apiserver_request_total{verb,resource,code}            counter
//	apiserver_request_duration_seconds{verb,resource}      histogram, not for long-running requests
//	apiserver_longrunning_requests{verb,resource}          gauge: open watches
//	apiserver_current_inflight_requests{request_kind}      gauge: readOnly / mutating
//
// verb is kube's reported verb: GET, LIST, WATCH, POST, PUT, PATCH, DELETE,
// or the HTTP method of a non-resource request.
type RequestMetrics struct {
	total       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
	inflight    *prometheus.GaugeVec
}

// NewRequestMetrics registers the metrics on reg. If reg already has them
// (a second server on the same registry), the registered ones are shared.
func NewRequestMetrics(reg prometheus.Registerer) (*RequestMetrics, error) {
	m := &RequestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, resource, and HTTP response code.",
		}, []string{"verb", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds",
			Help: "Response latency distribution in seconds for each verb and resource, long-running requests excluded.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
				4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "resource"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Gauge of all active long-running apiserver requests broken out by verb and resource.",
		}, []string{"verb", "resource"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Number of requests currently being served, by kind (readOnly or mutating).",
		}, []string{"request_kind"}),
	}
	var err error
	if m.total, err = promreg.Register(reg, m.total); err != nil {
		return nil, err
	}
	if m.duration, err = promreg.Register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.longRunning, err = promreg.Register(reg, m.longRunning); err != nil {
		return nil, err
	}
	if m.inflight, err = promreg.Register(reg, m.inflight); err != nil {
		return nil, err
	}
	return m, nil
}

// WithMetrics records every request in m. It must run inside the filter
// that sets the request info, so that verb and resource are known.
func WithMetrics(h http.Handler, m *RequestMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb, resource := reportedVerb(r), ""
		if info, ok := request.InfoFrom(r.Context()); ok {
			resource = info.Resource
		}
		rec := &recorder{ResponseWriter: w}
		start := time.Now()
		longRunning := IsLongRunning(r)
		if longRunning {
			g := m.longRunning.WithLabelValues(verb, resource)
			g.Inc()
			defer g.Dec()
		} else {
			kind := "readOnly"
			if isMutating(r) {
				kind = "mutating"
			}
			g := m.inflight.WithLabelValues(kind)
			g.Inc()
			defer g.Dec()
		}
		// Deferred so that a panicking request is counted too, as the 500
		// the recovery filter above will write if nothing was sent yet.
		returned := false
		defer func() {
			code := rec.status()
			if !returned && !rec.wrote {
				code = http.StatusInternalServerError
			}
			m.total.WithLabelValues(verb, resource, strconv.Itoa(code)).Inc()
			if !longRunning {
				m.duration.WithLabelValues(verb, resource).Observe(time.Since(start).Seconds())
			}
		}()
		h.ServeHTTP(rec, r)
		returned = true
	})
}

// reportedVerb is kube's metric verb for r.
func reportedVerb(r *http.Request) string {
	info, ok := request.InfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		if IsLongRunning(r) && r.Method == http.MethodGet {
			return "WATCH"
		}
		return strings.ToUpper(r.Method)
	}
	switch info.Verb {
	case "get":
		return "GET"
	case "list":
		return "LIST"
	case "watch":
		return "WATCH"
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		return "PATCH"
	case "delete", "deletecollection":
		return "DELETE"
	}
	return strings.ToUpper(r.Method)
}
