package filters

import (
	"net/http"
	"strconv"
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
//	authentication_attempts{result}                        counter: success, failure, error
//
// The request metrics are recorded after authentication, so a client
// without credentials cannot add series: an unauthenticated request is
// counted once, in authentication_attempts{result="failure"} (no
// credential) or {result="error"} (an invalid one). Label values come from
// fixed sets: verb is kube's reported verb (GET, LIST, WATCH, POST, PUT,
// PATCH, APPLY, DELETE, CONNECT, …; "other" for any other method), and
// resource is a resource the server serves, "other" for any other, or ""
// for a non-resource request (/healthz, discovery). So the number of series
// is bounded by what the server serves, whatever the requests.
type RequestMetrics struct {
	total       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
	inflight    *prometheus.GaugeVec
	authn       *prometheus.CounterVec
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
		authn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "authentication_attempts",
			Help: "Counter of authenticated attempts.",
		}, []string{"result"}),
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
	if m.authn, err = promreg.Register(reg, m.authn); err != nil {
		return nil, err
	}
	return m, nil
}

// Results of authentication_attempts, kube's.
const (
	authnSuccess = "success"
	authnFailure = "failure"
	authnError   = "error"
)

// authenticated counts one authentication attempt; m may be nil.
func (m *RequestMetrics) authenticated(ok bool, err error) {
	if m == nil {
		return
	}
	result := authnSuccess
	switch {
	case err != nil && !ok:
		result = authnError
	case !ok:
		result = authnFailure
	}
	m.authn.WithLabelValues(result).Inc()
}

// KnownResource reports whether the server serves resource in group and
// version, for the resource label of the request metrics.
type KnownResource func(group, version, resource string) bool

// otherLabel is the label value of every verb and resource outside the
// fixed sets, as kube's metrics report unknown verbs.
const otherLabel = "other"

// Metrics records every request in m. It must run inside the filter
// that sets the request info, so that verb and resource are known, and
// inside authentication, so that only authenticated requests make series.
// known tells the resources the server serves; a resource it does not know
// (or every resource, if known is nil) is labelled "other".
func Metrics(m *RequestMetrics, known KnownResource) Filter {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			verb, resource := reportedVerb(r), reportedResource(r, known)
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
}

// reportedResource is the resource label: the resource if the server
// serves it, "other" if not, "" for a non-resource request.
func reportedResource(r *http.Request, known KnownResource) string {
	info, ok := request.InfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		return ""
	}
	if known != nil && known(info.APIGroup, info.APIVersion, info.Resource) {
		return info.Resource
	}
	return otherLabel
}

// connectSubresources are kube's: requests to them are reported as CONNECT.
var connectSubresources = map[string]bool{"log": true, "exec": true, "portforward": true, "attach": true, "proxy": true}

// applyPatchType is the content type of a server-side apply.
const applyPatchType = "application/apply-patch+yaml"

// reportedVerb is kube's metric verb for r, from a fixed set: GET, LIST,
// WATCH, POST, PUT, PATCH, APPLY, DELETE, CONNECT, PROXY; "other" for
// anything else.
func reportedVerb(r *http.Request) string {
	info, ok := request.InfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		switch r.Method {
		case http.MethodGet:
			if watchQuery(r) {
				return "WATCH"
			}
			return "GET"
		case http.MethodHead:
			return "GET"
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodConnect:
			return r.Method
		}
		return otherLabel
	}
	if connectSubresources[info.Subresource] {
		return "CONNECT"
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
		if r.Header.Get("Content-Type") == applyPatchType {
			return "APPLY"
		}
		return "PATCH"
	case "delete", "deletecollection":
		return "DELETE"
	case "proxy":
		return "PROXY"
	}
	return otherLabel
}
