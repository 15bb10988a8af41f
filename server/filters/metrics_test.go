package filters

import (
	"bufio"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/listwatch/listwatch/server/request"
)

// metricValue sums the series of name whose labels include want: counter
// and gauge values, histogram sample counts.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				sum += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				sum += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t)
	tok := e.creds.AdminToken
	const pods = "/api/v1/namespaces/default/pods"

	for range 3 {
		decodeEcho(t, e.do(t, c, http.MethodGet, pods, tok, nil))
	}
	decodeEcho(t, e.do(t, c, http.MethodPost, pods, tok, nil))
	e.do(t, c, http.MethodGet, pods, "wrong", nil)
	decodeEcho(t, e.do(t, c, http.MethodGet, "/healthz", tok, nil))

	watch := e.async(c, http.MethodGet, pods+"?watch=1&hold=1", tok)
	list := e.async(c, http.MethodGet, pods+"?hold=1", tok)
	e.waitEntered(t, 2)

	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"apiserver_request_total", map[string]string{"verb": "LIST", "resource": "pods", "code": "200"}, 3},
		{"apiserver_request_total", map[string]string{"verb": "POST", "resource": "pods", "code": "200"}, 1},
		// An unauthenticated request is only an authentication attempt.
		{"apiserver_request_total", map[string]string{"code": "401"}, 0},
		{"authentication_attempts", map[string]string{"result": "error"}, 1},
		{"authentication_attempts", map[string]string{"result": "success"}, 7},
		{"apiserver_request_total", map[string]string{"verb": "GET", "resource": "", "code": "200"}, 1},
		{"apiserver_request_duration_seconds", map[string]string{"verb": "LIST", "resource": "pods"}, 3},
		{"apiserver_longrunning_requests", map[string]string{"verb": "WATCH", "resource": "pods"}, 1},
		{"apiserver_current_inflight_requests", map[string]string{"request_kind": "readOnly"}, 1},
		{"apiserver_current_inflight_requests", map[string]string{"request_kind": "mutating"}, 0},
	}
	for _, c := range checks {
		if got := metricValue(t, e.reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	close(e.release)
	<-watch
	<-list
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"apiserver_longrunning_requests", map[string]string{}, 0},
		{"apiserver_current_inflight_requests", map[string]string{}, 0},
		{"apiserver_request_total", map[string]string{"verb": "WATCH", "resource": "pods", "code": "200"}, 1},
		// Watches are not in the latency histogram.
		{"apiserver_request_duration_seconds", map[string]string{"verb": "WATCH"}, 0},
		{"apiserver_request_duration_seconds", map[string]string{"verb": "LIST", "resource": "pods"}, 4},
	} {
		if got := metricValue(t, e.reg, c.name, c.labels); got != c.want {
			t.Errorf("after: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestRequestMetricsShareRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewRequestMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRequestMetrics(reg)
	if err != nil {
		t.Fatalf("second registration: %v", err)
	}
	if a.total != b.total {
		t.Error("second RequestMetrics does not share the registered counter")
	}
}

// TestWatchStreamsThroughChain: a watch's first event reaches the client
// while the handler is still running, through every filter's writer.
func TestWatchStreamsThroughChain(t *testing.T) {
	var e *env
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type":"ADDED","object":{}}` + "\n"))
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		select {
		case <-e.release:
		case <-r.Context().Done():
		}
	})
	e = newEnv(t, envConfig{api: api, timeout: 1})
	c := e.client(t, e.adminCert(t))
	resp := e.do(t, c, http.MethodGet, "/api/v1/namespaces/default/pods?watch=1", "", nil)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != `{"type":"ADDED","object":{}}`+"\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	close(e.release)
}

func TestReportedLabels(t *testing.T) {
	known := func(group, version, resource string) bool {
		return group == "" && version == "v1" && resource == "pods"
	}
	tests := []struct {
		method, target, contentType string
		verb, resource              string
	}{
		{"GET", "/api/v1/namespaces/default/pods", "", "LIST", "pods"},
		{"GET", "/api/v1/namespaces/default/pods/a", "", "GET", "pods"},
		{"HEAD", "/api/v1/namespaces/default/pods/a", "", "GET", "pods"},
		{"GET", "/api/v1/pods?watch=true", "", "WATCH", "pods"},
		{"GET", "/api/v1/watch/pods", "", "WATCH", "pods"},
		{"POST", "/api/v1/namespaces/default/pods", "", "POST", "pods"},
		{"PUT", "/api/v1/namespaces/default/pods/a", "", "PUT", "pods"},
		{"PATCH", "/api/v1/namespaces/default/pods/a", "application/merge-patch+json", "PATCH", "pods"},
		{"PATCH", "/api/v1/namespaces/default/pods/a", "application/apply-patch+yaml", "APPLY", "pods"},
		{"DELETE", "/api/v1/namespaces/default/pods/a", "", "DELETE", "pods"},
		{"DELETE", "/api/v1/namespaces/default/pods", "", "DELETE", "pods"},
		{"POST", "/api/v1/namespaces/default/pods/a/exec", "", "CONNECT", "pods"},
		{"GET", "/api/v1/namespaces/default/pods/a/log", "", "CONNECT", "pods"},
		{"OPTIONS", "/api/v1/namespaces/default/pods", "", "other", "pods"},
		{"FOO", "/api/v1/namespaces/default/pods", "", "other", "pods"},
		{"GET", "/api/v1/namespaces/default/widgets", "", "LIST", "other"},
		{"GET", "/apis/x.example.com/v1/pods", "", "LIST", "other"},
		{"GET", "/healthz", "", "GET", ""},
		{"HEAD", "/version", "", "GET", ""},
		{"HEAD", "/version?watch=1", "", "GET", ""},
		{"GET", "/some/path?watch=1", "", "WATCH", ""},
		{"POST", "/random", "", "POST", ""},
		{"BREW", "/coffee", "", "other", ""},
		{"OPTIONS", "/", "", "other", ""},
	}
	for _, tt := range tests {
		r := newRequest(tt.method, tt.target)
		if tt.contentType != "" {
			r.Header.Set("Content-Type", tt.contentType)
		}
		info, err := request.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		r = r.WithContext(request.WithInfo(r.Context(), info))
		if verb, res := reportedVerb(r), reportedResource(r, known); verb != tt.verb || res != tt.resource {
			t.Errorf("%s %s: verb %q resource %q, want %q %q", tt.method, tt.target, verb, res, tt.verb, tt.resource)
		}
	}
	r := newRequest("GET", "/api/v1/namespaces/default/pods")
	info, _ := request.Parse(r)
	if res := reportedResource(r.WithContext(request.WithInfo(r.Context(), info)), nil); res != "other" {
		t.Errorf("without KnownResource: resource %q, want other", res)
	}
}
