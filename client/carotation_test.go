package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// pki is a root CA, an intermediate it signed, and a server certificate
// for 127.0.0.1 and "api.test" the intermediate signed.
type pki struct {
	root   *testCert
	server tls.Certificate // leaf then intermediate, as servers send them
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	root := issue(t, name+" root", nil, true, nil)
	inter := issue(t, name+" intermediate", root, true, nil)
	leaf := issue(t, name+" server", inter, false, &x509.Certificate{
		DNSNames:    []string{"api.test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	return &pki{root: root, server: tls.Certificate{
		Certificate: [][]byte{leaf.cert.Raw, inter.cert.Raw},
		PrivateKey:  leaf.key,
	}}
}

// issue makes a certificate for cn signed by parent (self-signed when
// nil); a CA when ca, else a server certificate with the SANs of sans.
func issue(t *testing.T, cn string, parent *testCert, ca bool, sans *x509.Certificate) *testCert {
	t.Helper()
	return makeCert(t, cn, parent, func(c *x509.Certificate) {
		c.IsCA = ca
		if ca {
			c.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
			return
		}
		c.KeyUsage = x509.KeyUsageDigitalSignature
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		c.DNSNames, c.IPAddresses = sans.DNSNames, sans.IPAddresses
	})
}

// rotatingServer serves 200 over TLS on 127.0.0.1 with whichever pki's
// certificate is current at each handshake.
func rotatingServer(t *testing.T, first *pki) (*httptest.Server, *atomic.Pointer[pki]) {
	t.Helper()
	var cur atomic.Pointer[pki]
	cur.Store(first)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{}`))
	})
	srv := startTLSWith(t, ok, func(srv *httptest.Server) {
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
		// Per handshake: a client dialling an IP sends no SNI, and then a
		// GetCertificate would lose to the certificate httptest installs.
		srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return &tls.Config{Certificates: []tls.Certificate{cur.Load().server}, NextProtos: []string{"h2", "http/1.1"}}, nil
		}}
	})
	return srv, &cur
}

func isUnknownAuthority(err error) bool {
	var ua x509.UnknownAuthorityError
	return errors.As(err, &ua)
}

// TestCAFileRotation: a Client trusting a CA file picks up a rotated file
// within client-go's 5 minutes, on its own clock, and checks the new
// chain as strictly as the old one.
func TestCAFileRotation(t *testing.T) {
	old, next := newPKI(t, "old"), newPKI(t, "new")
	srv, serving := rotatingServer(t, old)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	writeFile(t, caFile, string(old.root.certPEM))
	clk := newFakeClock(false)
	c, err := newClient(&Config{Host: srv.URL, CAFile: caFile, QPS: -1}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	get := func() error { return c.GetJSON(ctxT(t), "/", &struct{}{}) }
	// Trusting the root is enough: the server sends its intermediate.
	if err := get(); err != nil {
		t.Fatal(err)
	}

	// The server moves to the new CA; the file does not yet, so a new
	// connection fails.
	serving.Store(next)
	c.CloseIdleConnections()
	if err := get(); !isUnknownAuthority(err) {
		t.Fatalf("new server CA, old file: %v", err)
	}
	// The file changes; it is not read again before 5 minutes.
	writeFile(t, caFile, string(old.root.certPEM)+string(next.root.certPEM))
	clk.Advance(caReloadPeriod - time.Second)
	if err := get(); !isUnknownAuthority(err) {
		t.Fatalf("before the period: %v", err)
	}
	clk.Advance(time.Second)
	if err := get(); err != nil {
		t.Fatalf("after the period: %v", err)
	}

	// A file that becomes unreadable, empty or junk keeps the trust.
	for _, content := range []string{"", "not a certificate"} {
		writeFile(t, caFile, content)
		clk.Advance(caReloadPeriod)
		c.CloseIdleConnections()
		if err := get(); err != nil {
			t.Fatalf("CA file %q: %v", content, err)
		}
	}
	if err := os.Remove(caFile); err != nil {
		t.Fatal(err)
	}
	clk.Advance(caReloadPeriod)
	c.CloseIdleConnections()
	if err := get(); err != nil {
		t.Fatalf("CA file removed: %v", err)
	}

	// Back to only the old root: new connections fail again.
	writeFile(t, caFile, string(old.root.certPEM))
	clk.Advance(caReloadPeriod)
	if err := get(); !isUnknownAuthority(err) {
		t.Fatalf("old root only: %v", err)
	}
}

// TestCAFileRotationKeepsVerification: after a rotation the server's
// name is still checked (ServerName, and the host's IP otherwise), and a
// chain that does not reach the new root still fails.
func TestCAFileRotationKeepsVerification(t *testing.T) {
	old, next, stranger := newPKI(t, "old"), newPKI(t, "new"), newPKI(t, "stranger")
	for _, tc := range []struct {
		name       string
		serverName string
		serve      *pki
		ok         bool
	}{
		{"IP SAN", "", next, true},
		{"DNS SAN by ServerName", "api.test", next, true},
		{"wrong ServerName", "other.test", next, false},
		{"chain to another root", "", stranger, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, serving := rotatingServer(t, old)
			caFile := filepath.Join(t.TempDir(), "ca.crt")
			writeFile(t, caFile, string(old.root.certPEM))
			clk := newFakeClock(false)
			c, err := newClient(&Config{Host: srv.URL, CAFile: caFile, ServerName: tc.serverName, QPS: -1}, clk)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.CloseIdleConnections)
			writeFile(t, caFile, string(next.root.certPEM))
			serving.Store(tc.serve)
			clk.Advance(caReloadPeriod)
			err = c.GetJSON(ctxT(t), "/", &struct{}{})
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if tc.ok {
				return
			}
			var hostErr x509.HostnameError
			if !errors.As(err, &hostErr) && !isUnknownAuthority(err) {
				t.Fatalf("err %v is not a verification error", err)
			}
		})
	}
}

// TestCAFileEmptyTrustsNothing: an empty CA file is an empty pool, as in
// client-go 1.36+, not the system roots; once filled, it is trusted.
func TestCAFileEmptyTrustsNothing(t *testing.T) {
	p := newPKI(t, "p")
	srv, _ := rotatingServer(t, p)
	caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.crt"), "")
	clk := newFakeClock(false)
	c, err := newClient(&Config{Host: srv.URL, CAFile: caFile, QPS: -1}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	if err := c.GetJSON(ctxT(t), "/", &struct{}{}); !isUnknownAuthority(err) {
		t.Fatalf("empty CA file: %v", err)
	}
	writeFile(t, caFile, string(p.root.certPEM))
	clk.Advance(caReloadPeriod)
	if err := c.GetJSON(ctxT(t), "/", &struct{}{}); err != nil {
		t.Fatal(err)
	}
}

// TestCADataDoesNotRotate: CAData wins over CAFile and is never replaced.
func TestCADataDoesNotRotate(t *testing.T) {
	old, next := newPKI(t, "old"), newPKI(t, "new")
	srv, serving := rotatingServer(t, old)
	caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.crt"), string(next.root.certPEM))
	clk := newFakeClock(false)
	c, err := newClient(&Config{Host: srv.URL, CAData: old.root.certPEM, CAFile: caFile, QPS: -1}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	serving.Store(next)
	clk.Advance(caReloadPeriod)
	if err := c.GetJSON(ctxT(t), "/", &struct{}{}); !isUnknownAuthority(err) {
		t.Fatalf("CAData with a CAFile: %v", err)
	}
}
