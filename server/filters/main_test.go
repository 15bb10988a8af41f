package filters

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/internal/pki"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const bobToken = "bob-token-0123456789"

// echo is what the test API answers: who it saw and what it got.
type echo struct {
	User          string   `json:"user"`
	Groups        []string `json:"groups"`
	Authorization string   `json:"authorization"`
	BodyLen       int64    `json:"bodyLen"`
	Verb          string   `json:"verb"`
	HasDeadline   bool     `json:"hasDeadline"`
}

// env is a real HTTPS server on 127.0.0.1 behind the full filter chain.
type env struct {
	creds   *pki.Credentials
	srv     *httptest.Server
	reg     *prometheus.Registry
	logs    *syncBuffer
	entered chan string   // the API sends the path of every ?hold request here...
	release chan struct{} // ...and waits for this to close
}

type envConfig struct {
	policy  auth.PolicyList
	limits  InFlightLimits
	timeout time.Duration
	api     http.Handler // replaces the echo API
	// connState, if set, is told of every connection's state changes.
	connState func(net.Conn, http.ConnState)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t *testing.T, cfg envConfig) *env {
	t.Helper()
	creds, err := pki.EnsureCredentials(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tokenCSV, err := os.ReadFile(creds.Path(pki.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	tokenCSV = append(tokenCSV, bobToken+",bob,1002,\"dev\"\n"...)
	tokens, err := auth.ParseTokenFile(bytes.NewReader(tokenCSV))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{creds: creds, reg: prometheus.NewRegistry(), logs: &syncBuffer{},
		entered: make(chan string, 16), release: make(chan struct{})}
	metrics, err := NewRequestMetrics(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	api := cfg.api
	if api == nil {
		api = http.HandlerFunc(e.echoAPI)
	}
	authz := auth.NewAuthorizer(cfg.policy)
	h := Chain(api,
		Recovery(slog.New(slog.NewTextHandler(e.logs, nil))),
		request.WithRequestInfo,
		BodyDeadline(cfg.timeout),
		TimeoutParameter,
		Authentication(auth.AnonymousPublicInfo{Authenticator: auth.Union{auth.X509{Roots: pki.ClientCAPool(creds)}, tokens}}, metrics),
		Impersonation(authz),
		Metrics(metrics, servesPodsAndConfigMaps),
		Authorization(authz),
		MaxInFlight(cfg.limits),
		Timeout(cfg.timeout),
		BodyLimit(DefaultMaxBodyBytes),
	)
	e.srv = httptest.NewUnstartedServer(h)
	e.srv.TLS = pki.TLSConfig(creds)
	e.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // expected TLS handshake failures
	e.srv.Config.ConnState = cfg.connState
	e.srv.EnableHTTP2 = true
	e.srv.StartTLS()
	t.Cleanup(func() {
		select {
		case <-e.release:
		default:
			close(e.release)
		}
		e.srv.Close()
	})
	return e
}

// servesPodsAndConfigMaps is the test API's KnownResource.
func servesPodsAndConfigMaps(group, version, resource string) bool {
	return group == "" && version == "v1" && (resource == "pods" || resource == "configmaps")
}

func (e *env) echoAPI(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("hold") != "" {
		e.entered <- r.URL.Path
		select {
		case <-e.release:
		case <-r.Context().Done():
		}
	}
	n, _ := io.Copy(io.Discard, r.Body)
	u, _ := request.UserFrom(r.Context())
	info, _ := request.InfoFrom(r.Context())
	_, hasDeadline := r.Context().Deadline()
	out := echo{Authorization: r.Header.Get("Authorization"), BodyLen: n, HasDeadline: hasDeadline}
	if u != nil {
		out.User, out.Groups = u.Name, u.Groups
	}
	if info != nil {
		out.Verb = info.Verb
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// client returns an HTTPS client that trusts the CA and presents certs.
func (e *env) client(t *testing.T, certs ...tls.Certificate) *http.Client {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.srv.TLS.ClientCAs, Certificates: certs}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func (e *env) adminCert(t *testing.T) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(e.creds.AdminCertPEM, e.creds.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// do sends a request with an optional bearer token.
func (e *env) do(t *testing.T, c *http.Client, method, path, token string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decodeEcho(t *testing.T, resp *http.Response) echo {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, want 200: %s", resp.StatusCode, b)
	}
	var out echo
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantText checks a refusal kube answers in plain text (http.Error): HTTP
// code, content type and message.
func wantText(t *testing.T, resp *http.Response, code int, message string) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != code || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || string(body) != message+"\n" {
		t.Errorf("got %d %q %q, want %d text/plain %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, code, message)
	}
}

// wantStatus checks a refusal: HTTP code, JSON content type, and the Status.
func wantStatus(t *testing.T, resp *http.Response, code int, reason wire.StatusReason, message string) *wire.Status {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, code, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var s wire.Status
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatalf("body is not a Status: %v: %s", err, body)
	}
	if s.Kind != "Status" || s.APIVersion != "v1" || s.Status != wire.StatusFailure || int(s.Code) != code || s.Reason != reason {
		t.Errorf("Status = %+v, want code %d reason %s", s, code, reason)
	}
	if message != "" && s.Message != message {
		t.Errorf("message\n got %q\nwant %q", s.Message, message)
	}
	return &s
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
