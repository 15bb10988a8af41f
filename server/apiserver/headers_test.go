package apiserver_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"regexp"
	"testing"

	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestEveryAnswerHasKubesHeaders: as kube-apiserver's handler chain does,
// every answer, a refused one too, carries an Audit-Id (the request's own,
// else a new UUID) and Cache-Control "no-cache, private".
func TestEveryAnswerHasKubesHeaders(t *testing.T) {
	srv := apiservertest.Start(t, "")
	creds := srv.Credentials()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(creds.CAPEM)
	admin, err := tls.X509KeyPair(creds.AdminCertPEM, creds.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}}
	defer tr.CloseIdleConnections()
	anon := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer anon.CloseIdleConnections()
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for _, c := range []struct {
		name    string
		rt      http.RoundTripper
		path    string
		auditID string
		code    int
	}{
		{"list", tr, "/api/v1/namespaces/default/configmaps", "", http.StatusOK},
		{"missing object", tr, "/api/v1/namespaces/default/configmaps/nope", "", http.StatusNotFound},
		{"discovery", tr, "/apis", "", http.StatusOK},
		{"anonymous", anon, "/api/v1/namespaces", "", http.StatusUnauthorized},
		{"the client's audit id", tr, "/api/v1/namespaces", "my-audit-id", http.StatusOK},
	} {
		req, err := http.NewRequest("GET", srv.URL()+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.auditID != "" {
			req.Header.Set("Audit-Id", c.auditID)
		}
		resp, err := c.rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		id := resp.Header.Get("Audit-Id")
		switch {
		case resp.StatusCode != c.code:
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.code)
		case resp.Header.Get("Cache-Control") != "no-cache, private":
			t.Errorf("%s: Cache-Control %q", c.name, resp.Header.Get("Cache-Control"))
		case c.auditID != "" && id != c.auditID, c.auditID == "" && !uuid.MatchString(id):
			t.Errorf("%s: Audit-Id %q", c.name, id)
		}
	}
}
