package filters

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/pki"
	"github.com/listwatch/listwatch/wire"
)

func TestAuthenticationToken(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t)

	got := decodeEcho(t, e.do(t, c, http.MethodGet, "/version", e.creds.AdminToken, nil))
	if got.User != "admin" || !contains(got.Groups, "system:masters") || !contains(got.Groups, "system:authenticated") {
		t.Errorf("admin token: %+v", got)
	}
	if got.Authorization != "" {
		t.Errorf("Authorization header reached the API: %q", got.Authorization)
	}

	for _, token := range []string{"not-a-token", "" /* missing */} {
		resp := e.do(t, c, http.MethodGet, "/version", token, nil)
		wantStatus(t, resp, http.StatusUnauthorized, wire.ReasonUnauthorized, "Unauthorized")
	}
}

func TestAuthenticationClientCert(t *testing.T) {
	e := newEnv(t, envConfig{})
	c := e.client(t, e.adminCert(t))
	got := decodeEcho(t, e.do(t, c, http.MethodGet, "/api/v1/namespaces/default/pods", "", nil))
	if got.User != "admin" || !contains(got.Groups, "system:masters") || got.Verb != "list" {
		t.Errorf("client cert: %+v", got)
	}
	// A certificate and a token at once (what our kubeconfig makes kubectl
	// do): the certificate wins, the header is still stripped.
	got = decodeEcho(t, e.do(t, c, http.MethodGet, "/version", bobToken, nil))
	if got.User != "admin" || got.Authorization != "" {
		t.Errorf("cert + token: %+v", got)
	}
}

func TestAuthenticationForeignCertRefused(t *testing.T) {
	e := newEnv(t, envConfig{})
	other, err := pki.EnsureCredentials(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := tls.X509KeyPair(other.AdminCertPEM, other.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// Go's client only offers certificates from CAs the server names, so
	// force it the way a misconfigured client would.
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: e.srv.TLS.ClientCAs,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &foreign, nil
		},
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(e.srv.URL + "/version")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("foreign client certificate accepted: status %d", resp.StatusCode)
	}
	if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("error %v, want a TLS certificate error", err)
	}

	// Offered the usual way, Go's client withholds it and the request is
	// simply unauthenticated.
	resp2 := e.do(t, e.client(t, foreign), http.MethodGet, "/version", "", nil)
	wantStatus(t, resp2, http.StatusUnauthorized, wire.ReasonUnauthorized, "Unauthorized")
}
