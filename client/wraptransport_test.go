package client

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// recordingTransport remembers every request it forwards, with the
// Authorization header as it left the client.
type recordingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string // "METHOD path?query auth"
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.seen = append(rt.seen, req.Method+" "+req.URL.RequestURI()+" "+req.Header.Get("Authorization"))
	rt.mu.Unlock()
	return rt.base.RoundTrip(req)
}

func (rt *recordingTransport) requests() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.seen...)
}

func TestWrapTransportSeesEveryRequest(t *testing.T) {
	api := newFakeAPI()
	api.token = "tok"
	srv := startTLS(t, api)
	var rec *recordingTransport
	calls := 0
	c := newTestClient(t, srv, func(cfg *Config) {
		cfg.BearerToken = "tok"
		cfg.WrapTransport = func(base http.RoundTripper) http.RoundTripper {
			calls++
			rec = &recordingTransport{base: base}
			return rec
		}
	})
	if calls != 1 {
		t.Fatalf("WrapTransport called %d times, want 1", calls)
	}
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	if _, err := cms.List(ctxT(t), wire.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctxT(t), wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	got := rec.requests()
	if len(got) != 2 || !strings.HasPrefix(got[0], "GET /api/v1/namespaces/ns/configmaps ") ||
		!strings.Contains(got[1], "watch=true") {
		t.Fatalf("wrapped transport saw %q", got)
	}
	for _, r := range got {
		if !strings.HasSuffix(r, " Bearer tok") {
			t.Fatalf("request %q passed the wrapper without its credentials", r)
		}
	}
}

func TestWrapTransportWithExecPlugin(t *testing.T) {
	api := newFakeAPI()
	api.token = "from-plugin"
	srv := startTLS(t, api)
	p := newPlugin(t, ExecAPIVersionV1)
	p.output(t, 0, map[string]any{"token": "from-plugin"})
	var rec *recordingTransport
	c := newTestClient(t, srv, func(cfg *Config) {
		cfg.Exec = p.cfg
		cfg.WrapTransport = func(base http.RoundTripper) http.RoundTripper {
			rec = &recordingTransport{base: base}
			return rec
		}
	})
	resp, err := c.Do(ctxT(t), http.MethodGet, "/api/v1/configmaps", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := rec.requests(); len(got) != 1 || !strings.HasSuffix(got[0], " Bearer from-plugin") {
		t.Fatalf("wrapped transport saw %q", got)
	}
}

func TestWrapTransportNil(t *testing.T) {
	_, err := New(&Config{Host: "https://127.0.0.1:1", WrapTransport: func(http.RoundTripper) http.RoundTripper { return nil }})
	if err == nil {
		t.Fatal("New accepted a WrapTransport returning nil")
	}
}
