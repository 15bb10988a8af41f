package reliability

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/internal/pki"
	"github.com/listwatch/listwatch/wire"
)

const (
	bobToken   = "bob-token-0123456789"
	carolToken = "carol-token-0123456789"
)

// secEnv is a server with two ordinary users, bob and carol, who may do
// anything (ABAC), its metrics registry, and raw HTTPS access to it.
type secEnv struct {
	srv  *apiserver.APIServer
	reg  *prometheus.Registry
	host string
	pool *x509.CertPool
}

func newSecEnv(t *testing.T, mutate func(*apiserver.Options)) *secEnv {
	t.Helper()
	cfg := t.TempDir()
	tokens := filepath.Join(cfg, "tokens.csv")
	policy := filepath.Join(cfg, "policy.jsonl")
	if err := os.WriteFile(tokens, []byte(bobToken+",bob,1002,\"dev\"\n"+carolToken+",carol,1003,\"dev\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte("{\"user\":\"bob\"}\n{\"user\":\"carol\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv := startServer(t, "", func(o *apiserver.Options) {
		o.TokenAuthFile, o.AuthorizationPolicyFile, o.Registerer = tokens, policy, reg
		// No controllers: these tests read server-wide gauges (open
		// watches, in-flight requests) that the controllers' own watches
		// would move.
		o.Controllers = []string{}
		o.DisableAdmission = true // nor the admission informers' watches
		if mutate != nil {
			mutate(o)
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.Credentials().CAPEM)
	return &secEnv{srv: srv, reg: reg, host: strings.TrimPrefix(srv.URL(), "https://"), pool: pool}
}

// client is an HTTPS client that presents cert (when not nil) whatever CA
// the server names, as a misconfigured client would.
func (e *secEnv) client(t *testing.T, cert *tls.Certificate) *http.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: e.pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// do sends a request and returns its status code and body.
func (e *secEnv) do(t *testing.T, c *http.Client, method, path, token, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// rawConn is a TLS connection speaking HTTP/1.1, whose reads and writes
// the test controls; a small receive buffer makes a client that does not
// read stall the server soon.
func (e *secEnv) rawConn(t *testing.T, smallBuffer bool) *tls.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", e.host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if smallBuffer {
		_ = nc.(*net.TCPConn).SetReadBuffer(4096)
	}
	c := tls.Client(nc, &tls.Config{RootCAs: e.pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	return c
}

// gauge sums the series of a gauge whose labels include want.
func (e *secEnv) gauge(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, m := range e.metric(t, name) {
		if hasLabels(m, want) {
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

func (e *secEnv) metric(t *testing.T, name string) []*dto.Metric {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, lp := range m.GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// waitGauge polls the registry until the gauge reaches want.
func (e *secEnv) waitGauge(t *testing.T, name string, labels map[string]string, want float64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for e.gauge(t, name, labels) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v after %v, want %v", name, labels, e.gauge(t, name, labels), within, want)
		}
		time.Sleep(20 * time.Millisecond) // polling a metric, not waiting for an event
	}
}

// requestSeries counts the series of the request metrics.
func (e *secEnv) requestSeries(t *testing.T) int {
	n := 0
	for _, name := range []string{"apiserver_request_total", "apiserver_request_duration_seconds",
		"apiserver_longrunning_requests", "apiserver_current_inflight_requests", "authentication_attempts"} {
		n += len(e.metric(t, name))
	}
	return n
}

// TestSecurityLimits: what one hostile or careless client can do to the
// server, and to its other users, is bounded.
func TestSecurityLimits(t *testing.T) {
	e := newSecEnv(t, func(o *apiserver.Options) {
		o.RequestTimeout = 2 * time.Second
		o.MaxRequestsInFlight = 1
		o.MaxMutatingRequestsInFlight = 1
		o.MaxWatches = 4
		o.MaxWatchesPerUser = 2
		o.WatchWriteTimeout = time.Second
	})
	t.Run("metrics cardinality", func(t *testing.T) { metricsCardinality(t, e) })
	t.Run("dribbled body", func(t *testing.T) { dribbledBody(t, e) })
	t.Run("watch limits", func(t *testing.T) { watchLimits(t, e) })
	t.Run("idle watch outlives the write timeout", func(t *testing.T) { idleWatch(t, e) })
	t.Run("watcher that does not read", func(t *testing.T) {
		fillConfigMaps(t, e, "default", 4, 128<<10)
		stalledWatch(t, e, "/api/v1/namespaces/default/configmaps?watch=1", 15*time.Second, false)
		if long() {
			fillConfigMaps(t, e, "default", 6, 2<<20-4096)
			stalledWatch(t, e, "/api/v1/namespaces/default/configmaps?watch=1", 15*time.Second, true)
		}
	})
}

// metricsCardinality: thousands of requests with random methods and paths,
// anonymous and authenticated, make a bounded number of series.
func metricsCardinality(t *testing.T, e *secEnv) {
	anon, admin := e.client(t, nil), e.client(t, nil)
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
	rng := mrand.New(mrand.NewPCG(1, 2))
	var mu sync.Mutex
	random := func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		m := methods[rng.IntN(len(methods))]
		if rng.IntN(3) == 0 {
			m = fmt.Sprintf("M%d", rng.Uint32())
		}
		n := rng.Uint32()
		p := []string{
			fmt.Sprintf("/api/v1/namespaces/default/r%d", n),
			fmt.Sprintf("/apis/g%d.example.com/v1/r%d/x", n, n),
			fmt.Sprintf("/api/v1/r%d?watch=1", n),
			fmt.Sprintf("/x%d/y", n),
			fmt.Sprintf("/healthz/c%d", n),
		}[rng.IntN(5)]
		return m, p
	}
	batch := func(n int) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					m, p := random()
					req, _ := http.NewRequest(m, e.srv.URL()+p, nil)
					c := anon
					if i%2 == 1 {
						req.Header.Set("Authorization", "Bearer "+e.srv.Credentials().AdminToken)
						c = admin
					}
					resp, err := c.Do(req)
					if err != nil {
						t.Errorf("%s %s: %v", m, p, err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
	}
	batch(1000)
	first := e.requestSeries(t)
	batch(1000)
	second := e.requestSeries(t)
	t.Logf("request metric series: %d after 1000 random requests, %d after 2000", first, second)
	if second > 200 || second-first > 20 {
		t.Errorf("request metric series grow with random requests: %d, then %d", first, second)
	}
	// Unauthenticated requests are counted once, as failed authentication
	// attempts, and make no request series.
	for _, m := range e.metric(t, "apiserver_request_total") {
		if hasLabels(m, map[string]string{"code": "401"}) {
			t.Errorf("a 401 in apiserver_request_total: %v", m.GetLabel())
		}
	}
	var failed float64
	for _, m := range e.metric(t, "authentication_attempts") {
		if hasLabels(m, map[string]string{"result": "failure"}) {
			failed += m.GetCounter().GetValue()
		}
	}
	if failed < 500 {
		t.Errorf("authentication_attempts{result=failure} = %v after 1000 anonymous requests", failed)
	}
}

// dribbledBody: a client that sends its body a byte at a time holds its
// in-flight slot only until the request timeout; then others are served.
func dribbledBody(t *testing.T, e *secEnv) {
	c := e.rawConn(t, false)
	fmt.Fprintf(c, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", bobToken)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := io.WriteString(c, "1\r\n \r\n"); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-stopped }()

	// The dribbler holds the only mutating slot...
	e.waitGauge(t, "apiserver_current_inflight_requests", map[string]string{"request_kind": "mutating"}, 1, 10*time.Second)
	// ...until the request timeout (2 s) answers it.
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	switch {
	case err == nil:
		resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("dribbled body: status %d, want 504", resp.StatusCode)
		}
	case isClosed(err):
	default:
		t.Fatalf("dribbled body: no answer after 15 s: %v", err)
	}
	// The slot is free for everyone else.
	code, body := e.do(t, e.client(t, nil), "POST", "/api/v1/namespaces/default/configmaps", carolToken,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after-dribble"}}`)
	if code != http.StatusCreated {
		t.Fatalf("POST after the dribbler: %d %s", code, body)
	}
}

// openWatch starts a watch and returns its status; a 200 stays open
// until the test ends.
func (e *secEnv) openWatch(t *testing.T, c *http.Client, token string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL()+"/api/v1/namespaces/default/configmaps?watch=1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode, resp.Header, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// watchLimits: watches take no slot of short requests; one user cannot
// take every watch slot; the admin is never locked out.
func watchLimits(t *testing.T, e *secEnv) {
	noTimeout := func() *http.Client { c := e.client(t, nil); c.Timeout = 0; return c }
	bob, carol, admin := noTimeout(), noTimeout(), noTimeout()
	for range 2 {
		if code, _, b := e.openWatch(t, bob, bobToken); code != http.StatusOK {
			t.Fatalf("bob's watch: %d %s", code, b)
		}
	}
	code, hdr, b := e.openWatch(t, bob, bobToken)
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" || string(b) != "Too many requests, please try again later.\n" {
		t.Fatalf("bob's third watch (limit 2 per user): %d Retry-After %q %s", code, hdr.Get("Retry-After"), b)
	}
	// Another user still gets watches, up to the server's limit (4).
	for range 2 {
		if code, _, b := e.openWatch(t, carol, carolToken); code != http.StatusOK {
			t.Fatalf("carol's watch: %d %s", code, b)
		}
	}
	// Every watch slot is taken: the admin is served anyway.
	if code, _, b := e.openWatch(t, admin, e.srv.Credentials().AdminToken); code != http.StatusOK {
		t.Fatalf("admin's watch with every slot taken: %d %s", code, b)
	}
	// Five open watches, one read-only slot: short requests still run.
	for range 3 {
		if code, b := e.do(t, bob, "GET", "/api/v1/namespaces/default/configmaps", bobToken, ""); code != http.StatusOK {
			t.Fatalf("list with watches open: %d %s", code, b)
		}
	}
}

// fillConfigMaps makes n configmaps of size bytes in ns.
func fillConfigMaps(t *testing.T, e *secEnv, ns string, n, size int) {
	t.Helper()
	c := e.client(t, nil)
	c.Timeout = 60 * time.Second
	data := strings.Repeat("x", size)
	var created struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	for i := range n {
		code, b := e.do(t, c, "POST", "/api/v1/namespaces/"+ns+"/configmaps", e.srv.Credentials().AdminToken,
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fill-%d-%d"},"data":{"x":%q}}`, size, i, data))
		if code != http.StatusCreated {
			t.Fatalf("create big-%d: %d %.200s", i, code, b)
		}
		if err := json.Unmarshal(b, &created); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the watch cache holds them all, so a watch's initial
	// events are ready at once.
	if code, b := e.do(t, c, "GET", "/api/v1/namespaces/"+ns+"/configmaps?limit=1&resourceVersionMatch=NotOlderThan&resourceVersion="+
		created.Metadata.ResourceVersion, e.srv.Credentials().AdminToken, ""); code != http.StatusOK {
		t.Fatalf("list: %d %.200s", code, b)
	}
}

// watchHTTP2 opens a watch as the admin over HTTP/2 (with cfg, if not
// nil), closed when the test ends.
func (e *secEnv) watchHTTP2(t *testing.T, path string, cfg *http.HTTP2Config) *http.Response {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pool}, ForceAttemptHTTP2: true, HTTP2: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	req, _ := http.NewRequest("GET", e.srv.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.srv.Credentials().AdminToken)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %s %d", resp.Proto, resp.StatusCode)
	}
	return resp
}

// idleWatch: a watch over HTTP/2 that has nothing to send for longer than
// the write timeout stays open and then delivers the next event. The
// write deadline used to stay armed between events, and over HTTP/2 a
// deadline is a timer on the stream: every quiet watch was reset with
// INTERNAL_ERROR after the timeout (kubectl get -w failed after a minute).
func idleWatch(t *testing.T, e *secEnv) {
	resp := e.watchHTTP2(t, "/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Didle-watch", nil)
	lines := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		readErr <- fmt.Errorf("stream ended: %v", sc.Err())
	}()
	// Quiet for three write timeouts (1 s here): the condition under
	// test, not a wait for something to happen.
	select {
	case err := <-readErr:
		t.Fatalf("idle watch: %v", err)
	case l := <-lines:
		t.Fatalf("idle watch sent %q", l)
	case <-time.After(3 * time.Second):
	}
	c := e.client(t, nil)
	if code, b := e.do(t, c, "POST", "/api/v1/namespaces/default/configmaps", e.srv.Credentials().AdminToken,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"idle-watch"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %.200s", code, b)
	}
	select {
	case err := <-readErr:
		t.Fatalf("after the quiet: %v", err)
	case l := <-lines:
		if !strings.HasPrefix(l, `{"type":"ADDED"`) {
			t.Fatalf("after the quiet: %.200s", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event 10 s after the create")
	}
}

// stalledWatch opens a watch whose initial events do not fit what the
// connection buffers, and never reads: the server must end the watch
// within the given time, and the stream with it. Over HTTP/2 the client's
// flow-control window is kept small (16 KiB), so a little data stalls the
// server; over HTTP/1.1 the socket buffers (MiBs) must fill first.
func stalledWatch(t *testing.T, e *secEnv, path string, within time.Duration, http1 bool) {
	t.Helper()
	// Of configmaps: the server's own RBAC informers keep watches of the
	// four RBAC resources open all along. Two of configmaps are the
	// server's own too, as kube-apiserver's: its cluster authentication
	// trust and legacy token tracking loops watch kube-system's.
	lr := map[string]string{"verb": "WATCH", "resource": "configmaps"}
	const own = 2
	e.waitGauge(t, "apiserver_longrunning_requests", lr, own, 10*time.Second) // earlier tests' watches gone, the server's open
	begin := time.Now()
	var body io.Reader
	if http1 {
		c := e.rawConn(t, true)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, e.srv.Credentials().AdminToken)
		e.waitGauge(t, "apiserver_longrunning_requests", lr, own+1, 10*time.Second)
		e.waitGauge(t, "apiserver_longrunning_requests", lr, own, within)
		// Drain what the kernel still holds, with a buffer that does not
		// throttle, to the end the server has put on the connection.
		_ = c.NetConn().(*net.TCPConn).SetReadBuffer(8 << 20)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		body = c
	} else {
		resp := e.watchHTTP2(t, path, &http.HTTP2Config{MaxReceiveBufferPerStream: 16 << 10})
		e.waitGauge(t, "apiserver_longrunning_requests", lr, own, within)
		body = resp.Body
	}
	t.Logf("watch of a client that does not read ended after %v", time.Since(begin).Round(100*time.Millisecond))
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, body); done <- err }()
	select {
	case err := <-done:
		if err != nil && !isClosed(err) {
			t.Fatalf("stream still open after the watch ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream still open 10 s after the watch ended")
	}
}

// TestSecurityDefaults: watch timeouts, client certificates and anonymous
// access on a server with default limits.
func TestSecurityDefaults(t *testing.T) {
	e := newSecEnv(t, nil)
	t.Run("timeoutSeconds without reading", func(t *testing.T) {
		// The write timeout (60 s by default) is far away: timeoutSeconds
		// alone must end the watch, blocked as it is in a write.
		fillConfigMaps(t, e, "default", 4, 128<<10)
		stalledWatch(t, e, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=2", 15*time.Second, false)
		if long() {
			fillConfigMaps(t, e, "default", 6, 2<<20-4096)
			stalledWatch(t, e, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=2", 15*time.Second, true)
		}
	})
	t.Run("timeoutSeconds=0", func(t *testing.T) { timeoutZero(t, e) })
	t.Run("bad client certificates", func(t *testing.T) { badClientCerts(t, e) })
	t.Run("public info", func(t *testing.T) { publicInfo(t, e) })
}

// timeoutZero: timeoutSeconds=0 is no client timeout, as in kube.
func timeoutZero(t *testing.T, e *secEnv) {
	c := e.client(t, nil)
	c.Timeout = 0
	req, _ := http.NewRequest("GET", e.srv.URL()+"/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=0&fieldSelector=metadata.name%3Dtz", nil)
	req.Header.Set("Authorization", "Bearer "+bobToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch with timeoutSeconds=0: %d %s", resp.StatusCode, b)
	}
	if code, b := e.do(t, e.client(t, nil), "POST", "/api/v1/namespaces/default/configmaps", bobToken,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"tz"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"object"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil || ev.Type != "ADDED" || ev.Object.Metadata.Name != "tz" {
		t.Fatalf("first event %+v, %v; want ADDED tz", ev, err)
	}
}

// badClientCerts: a certificate from another CA, an expired one and one
// not for client auth do not fail the handshake; alone they are a 401,
// with a valid token the token authenticates.
func badClientCerts(t *testing.T, e *secEnv) {
	creds := e.srv.Credentials()
	other, err := pki.EnsureCredentials(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := tls.X509KeyPair(other.AdminCertPEM, other.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	certs := map[string]*tls.Certificate{
		"other CA": &foreign,
		"expired": signedByCA(t, creds, &x509.Certificate{Subject: pkix.Name{CommonName: "old", Organization: []string{"system:masters"}},
			NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}),
		"server usage": signedByCA(t, creds, &x509.Certificate{Subject: pkix.Name{CommonName: "srv", Organization: []string{"system:masters"}},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}),
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	for name, cert := range certs {
		t.Run(name, func(t *testing.T) {
			c := e.client(t, cert)
			if code, b := e.do(t, c, "GET", cms, "", ""); code != http.StatusUnauthorized {
				t.Errorf("certificate alone: %d %s, want 401", code, b)
			}
			// A bad credential is not anonymous, even on a public path.
			if code, b := e.do(t, c, "GET", "/healthz", "", ""); code != http.StatusUnauthorized {
				t.Errorf("certificate on /healthz: %d %s, want 401", code, b)
			}
			if code, b := e.do(t, c, "GET", cms, bobToken, ""); code != http.StatusOK {
				t.Errorf("certificate with bob's token: %d %s, want 200", code, b)
			}
		})
	}
	admin, err := tls.X509KeyPair(creds.AdminCertPEM, creds.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if code, b := e.do(t, e.client(t, &admin), "GET", "/api/v1/namespaces/kube-system/secrets", "", ""); code != http.StatusOK {
		t.Errorf("admin certificate: %d %s", code, b)
	}
}

// signedByCA issues tmpl, with a new key, from the server's CA.
func signedByCA(t *testing.T, creds *pki.Credentials, tmpl *x509.Certificate) *tls.Certificate {
	t.Helper()
	keyPEM, err := os.ReadFile(creds.Path(pki.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		t.Fatal("no PEM in the CA key file")
	}
	caKey, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	der, err := x509.CreateCertificate(rand.Reader, tmpl, creds.CA, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// publicInfo: kube's system:public-info-viewer paths are readable
// anonymously; nothing else is, not even a single health check's path
// (it answers a failure with its reason).
func publicInfo(t *testing.T, e *secEnv) {
	c := e.client(t, nil)
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/version", "/version/"} {
		if code, b := e.do(t, c, "GET", p, "", ""); code != http.StatusOK {
			t.Errorf("anonymous GET %s: %d %s, want 200", p, code, b)
		}
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/api"}, {"GET", "/apis"}, {"GET", "/api/v1/namespaces/default/configmaps"}, {"GET", "/openapi/v2"},
		{"GET", "/metrics"}, {"GET", "/healthzx"}, {"GET", "/versions"}, {"POST", "/healthz"}, {"DELETE", "/version"},
		{"GET", "/healthz/ping"}, {"GET", "/livez/etcd"}, {"GET", "/readyz/etcd"}, {"GET", "/readyz/"},
	} {
		code, b := e.do(t, c, r.method, r.path, "", "")
		var st wire.Status
		_ = json.Unmarshal(b, &st)
		if code != http.StatusUnauthorized || st.Reason != wire.ReasonUnauthorized {
			t.Errorf("anonymous %s %s: %d %s, want 401 Unauthorized", r.method, r.path, code, b)
		}
	}
}
