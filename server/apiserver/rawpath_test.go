package apiserver_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// clients are an admin's and an anonymous client of srv. The admin's
// follows redirects, as client-go's does.
func clients(t *testing.T, srv *apiservertest.Server) (admin, anon *http.Client) {
	t.Helper()
	creds := srv.Credentials()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(creds.CAPEM)
	cert, err := tls.X509KeyPair(creds.AdminCertPEM, creds.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}
	t.Cleanup(tr.CloseIdleConnections)
	anonTr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(anonTr.CloseIdleConnections)
	return &http.Client{Transport: tr}, &http.Client{Transport: anonTr}
}

// answer sends one request and returns its code, Content-Type and body.
func answer(t *testing.T, c *http.Client, method, url, body string) (int, string, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestPathsRoutedAsSent: as kube-apiserver's, serve's mux takes a path as
// sent: one with an empty, "." or ".." segment is not redirected to its
// clean form (http.ServeMux's 307, which a client follows with the same
// method), but answered as kube answers it: 404, as a Status under a
// prefix kube's router serves; for a name "." or "..", kube's 400. So a
// DELETE of a namespace's configmap ".." leaves the namespace be.
func TestPathsRoutedAsSent(t *testing.T) {
	srv := apiservertest.Start(t, "")
	admin, _ := clients(t, srv)
	u := srv.URL()
	if code, _, b := answer(t, admin, "POST", u+"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`); code != http.StatusCreated {
		t.Fatalf("namespace: %d %s", code, b)
	}
	noPath := `"message":"the server could not find the requested resource"`
	for _, c := range []struct {
		method, path string
		code         int
		ctype, body  string
	}{
		{"GET", "/api//v1/namespaces", 404, "application/json", noPath},
		{"POST", "/api/v1/./namespaces", 404, "application/json", noPath},
		{"GET", "/api/v1/namespaces/a/configmaps/../configmaps", 404, "application/json", noPath},
		{"GET", "/version/.", 404, "application/json", noPath},
		{"GET", "//api/v1/namespaces", 404, "text/plain; charset=utf-8", "404 page not found"},
		{"GET", "/./api", 404, "text/plain; charset=utf-8", "404 page not found"},
		{"GET", "/metrics/..", 404, "text/plain; charset=utf-8", "404 page not found"},
		{"DELETE", "/api/v1/namespaces/a/configmaps/..", 400, "application/json", `"message":"Name parameter invalid: \"..\": may not be '..'"`},
		{"GET", "/api/v1/namespaces/.", 400, "application/json", `"message":"Name parameter invalid: \".\": may not be '.'"`},
		{"GET", "/api/v1/namespaces/", 200, "application/json", `"kind":"NamespaceList"`},
	} {
		code, ctype, body := answer(t, admin, c.method, u+c.path, "")
		if code != c.code || ctype != c.ctype || !strings.Contains(body, c.body) {
			t.Errorf("%s %s: %d %s %s, want %d %s %s", c.method, c.path, code, ctype, body, c.code, c.ctype, c.body)
		}
	}
	_, _, b := answer(t, admin, "GET", u+"/api/v1/namespaces/a", "")
	var ns struct {
		Status struct{ Phase string } `json:"status"`
	}
	if err := json.Unmarshal([]byte(b), &ns); err != nil || ns.Status.Phase != "Active" {
		t.Errorf("namespace a after DELETE …/configmaps/..: %s", b)
	}
}
