package client

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// echoAuth answers with what the server saw: protocol, Authorization,
// User-Agent and client certificate name.
func echoAuth() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cn := ""
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_, _ = io.WriteString(w, strings.Join([]string{r.Proto, r.Header.Get("Authorization"), r.Header.Get("User-Agent"), cn}, "|"))
	}
}

func getEcho(t *testing.T, c *Client) []string {
	t.Helper()
	resp, err := c.Do(ctxT(t), http.MethodGet, "/echo", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "|")
}

func TestBearerTokenHTTP2AndUserAgent(t *testing.T) {
	srv := startTLS(t, echoAuth())
	got := getEcho(t, newTestClient(t, srv, func(c *Config) { c.BearerToken = "abc" }))
	if got[0] != "HTTP/2.0" || got[1] != "Bearer abc" || got[2] != DefaultUserAgent() {
		t.Fatalf("server saw %q", got)
	}
	got = getEcho(t, newTestClient(t, srv, func(c *Config) { c.UserAgent = "my-controller/1.0" }))
	if got[1] != "" || got[2] != "my-controller/1.0" {
		t.Fatalf("server saw %q", got)
	}
}

func TestTokenFileIsReread(t *testing.T) {
	srv := startTLS(t, echoAuth())
	path := filepath.Join(t.TempDir(), "token")
	writeFile(t, path, "one\n")
	clk := newFakeClock(false)
	c := newTestClientClock(t, srv, clk, func(c *Config) { c.BearerTokenFile = path; c.BearerToken = "ignored-once-file-read" })
	// The initial token is used until the first re-read.
	if got := getEcho(t, c)[1]; got != "Bearer ignored-once-file-read" {
		t.Fatalf("first token %q", got)
	}
	clk.Advance(tokenFilePeriod)
	if got := getEcho(t, c)[1]; got != "Bearer one" {
		t.Fatalf("after a minute %q", got)
	}
	writeFile(t, path, "two")
	clk.Advance(tokenFilePeriod / 2)
	if got := getEcho(t, c)[1]; got != "Bearer one" {
		t.Fatalf("token re-read too early: %q", got)
	}
	clk.Advance(tokenFilePeriod / 2)
	if got := getEcho(t, c)[1]; got != "Bearer two" {
		t.Fatalf("rotated token not picked up: %q", got)
	}
	// A vanished file keeps the last token.
	os.Remove(path)
	clk.Advance(tokenFilePeriod)
	if got := getEcho(t, c)[1]; got != "Bearer two" {
		t.Fatalf("after the file vanished: %q", got)
	}
}

func TestClientCertificates(t *testing.T) {
	ca := newCert(t, "ca", nil)
	leaf := newCert(t, "alice", ca)
	srv := startMTLS(t, ca, echoAuth())
	dir := t.TempDir()
	certFile := writeFile(t, filepath.Join(dir, "c.crt"), string(leaf.certPEM))
	keyFile := writeFile(t, filepath.Join(dir, "c.key"), string(leaf.keyPEM))

	if got := getEcho(t, newTestClient(t, srv, func(c *Config) { c.CertData, c.KeyData = leaf.certPEM, leaf.keyPEM })); got[3] != "alice" {
		t.Fatalf("cert data: server saw %q", got)
	}
	if got := getEcho(t, newTestClient(t, srv, func(c *Config) { c.CertFile, c.KeyFile = certFile, keyFile })); got[3] != "alice" {
		t.Fatalf("cert files: server saw %q", got)
	}
	c := newTestClient(t, srv, nil)
	if _, err := c.Do(ctxT(t), http.MethodGet, "/echo", nil, nil); err == nil {
		t.Fatal("request without a client certificate succeeded")
	}
}

func TestTLSVerification(t *testing.T) {
	srv := startTLS(t, echoAuth())
	ctx := ctxT(t)
	try := func(cfg *Config) error {
		c, err := New(cfg)
		if err != nil {
			return err
		}
		defer c.CloseIdleConnections()
		resp, err := c.Do(ctx, http.MethodGet, "/", nil, nil)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := try(&Config{Host: srv.URL}); err == nil {
		t.Error("unknown CA accepted")
	}
	if err := try(&Config{Host: srv.URL, Insecure: true}); err != nil {
		t.Errorf("insecure: %v", err)
	}
	caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.crt"), string(caPEM(srv)))
	if err := try(&Config{Host: srv.URL, CAFile: caFile}); err != nil {
		t.Errorf("CA file: %v", err)
	}
	// httptest's certificate names example.com.
	if err := try(&Config{Host: srv.URL, CAData: caPEM(srv), ServerName: "example.com"}); err != nil {
		t.Errorf("ServerName example.com: %v", err)
	}
	if err := try(&Config{Host: srv.URL, CAData: caPEM(srv), ServerName: "wrong.test"}); err == nil {
		t.Error("wrong ServerName accepted")
	}
	if err := try(&Config{Host: srv.URL, CAData: []byte("not pem")}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad CA: %v", err)
	}
	if err := try(&Config{Host: srv.URL, Insecure: true, CAData: caPEM(srv)}); !errors.Is(err, ErrConfig) {
		t.Errorf("insecure with CA: %v", err)
	}
}

func TestConfigFromURL(t *testing.T) {
	cfg, err := ConfigFromURL("http://127.0.0.1:8080/", "tok")
	if err != nil || cfg.Host != "http://127.0.0.1:8080/" || cfg.BearerToken != "tok" {
		t.Fatalf("%+v %v", cfg, err)
	}
	for _, bad := range []string{"", "ftp://x", "http://h/?q=1", "::"} {
		if _, err := ConfigFromURL(bad, ""); !errors.Is(err, ErrConfig) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	u, err := parseHost("127.0.0.1:6443")
	if err != nil || u.String() != "https://127.0.0.1:6443" {
		t.Fatalf("bare host:port: %v %v", u, err)
	}
}

func TestHostPathPrefix(t *testing.T) {
	var path string
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { path = r.URL.Path }))
	c := newTestClient(t, srv, func(c *Config) { c.Host = srv.URL + "/proxy/k8s/" })
	resp, err := c.Do(ctxT(t), http.MethodGet, "/api/v1/pods", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if path != "/proxy/k8s/api/v1/pods" {
		t.Fatalf("path %q", path)
	}
}

func TestInClusterConfig(t *testing.T) {
	srv := startTLS(t, echoAuth())
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "token"), "sa-token-1\n")
	writeFile(t, filepath.Join(dir, "ca.crt"), string(caPEM(srv)))
	writeFile(t, filepath.Join(dir, "namespace"), "kube-system")
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
	env := map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}

	cfg, err := inClusterConfig(dir, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	// The CA is named by file, as client-go's, so that it rotates.
	if cfg.Host != srv.URL || cfg.Namespace != "kube-system" || cfg.BearerTokenFile != filepath.Join(dir, "token") ||
		cfg.CAFile != filepath.Join(dir, "ca.crt") || cfg.CAData != nil {
		t.Fatalf("%+v", cfg)
	}
	clk := newFakeClock(false)
	c, err := newClient(cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if got := getEcho(t, c)[1]; got != "Bearer sa-token-1" {
		t.Fatalf("token %q", got)
	}
	// The kubelet rotates the projected token; the client follows.
	writeFile(t, filepath.Join(dir, "token"), "sa-token-2")
	clk.Advance(tokenFilePeriod)
	if got := getEcho(t, c)[1]; got != "Bearer sa-token-2" {
		t.Fatalf("rotated token %q", got)
	}

	if _, err := inClusterConfig(dir, func(string) string { return "" }); !errors.Is(err, ErrNotInCluster) {
		t.Fatalf("outside a pod: %v", err)
	}
	if _, err := inClusterConfig(t.TempDir(), func(k string) string { return env[k] }); !errors.Is(err, ErrConfig) {
		t.Fatalf("no token: %v", err)
	}
	// IPv6 service host.
	cfg, err = inClusterConfig(dir, func(k string) string {
		return map[string]string{"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}[k]
	})
	if err != nil || cfg.Host != "https://[fd00::1]:443" {
		t.Fatalf("ipv6: %+v %v", cfg, err)
	}
}
