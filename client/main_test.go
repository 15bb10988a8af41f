package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startTLS serves h on 127.0.0.1 over TLS with HTTP/2 offered, and closes
// the server when the test ends.
func startTLS(t testing.TB, h http.Handler) *httptest.Server {
	return startTLSWith(t, h, nil)
}

// startTLSWith is startTLS with setup adjusting the server (its TLS
// config, its error log) before it starts.
func startTLSWith(t testing.TB, h http.Handler, setup func(*httptest.Server)) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	if setup != nil {
		setup(srv)
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// caPEM is the PEM of the server's self-signed certificate.
func caPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// newTestClient builds a Client for srv trusting its certificate; mutate
// adjusts the Config first. Rate limiting is off unless mutate sets QPS.
func newTestClient(t testing.TB, srv *httptest.Server, mutate func(*Config)) *Client {
	t.Helper()
	return newTestClientClock(t, srv, realClock{}, mutate)
}

func newTestClientClock(t testing.TB, srv *httptest.Server, clk clock, mutate func(*Config)) *Client {
	t.Helper()
	cfg := &Config{Host: srv.URL, CAData: caPEM(srv), QPS: -1}
	if mutate != nil {
		mutate(cfg)
	}
	c, err := newClient(cfg, clk)
	if err != nil {
		t.Fatalf("newClient: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// testCert is a key pair and its PEM forms.
type testCert struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// newCert makes a certificate for cn, signed by parent (self-signed when
// parent is nil), usable as a CA and as a client certificate.
func newCert(t testing.TB, cn string, parent *testCert) *testCert {
	t.Helper()
	return makeCert(t, cn, parent, func(c *x509.Certificate) {
		c.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		c.IsCA = parent == nil
	})
}

// makeCert makes a certificate for cn, valid for an hour either side of
// now and signed by parent (self-signed when parent is nil), with its
// template's uses set by uses.
func makeCert(t testing.TB, cn string, parent *testCert, uses func(*x509.Certificate)) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		BasicConstraintsValid: true,
	}
	uses(tmpl)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// startMTLS serves h over TLS, requiring a client certificate signed by ca.
func startMTLS(t testing.TB, ca *testCert, h http.Handler) *httptest.Server {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return startTLSWith(t, h, func(srv *httptest.Server) {
		srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	})
}

// fakeClock is a clock whose time moves only when the test says so. Every
// Sleep reports its duration on slept; with auto set, Sleep advances the
// clock and returns at once, otherwise it blocks until Advance passes its
// deadline.
type fakeClock struct {
	slept chan time.Duration
	auto  bool

	mu       sync.Mutex // guards now and sleepers
	now      time.Time
	sleepers []fakeSleeper
}

type fakeSleeper struct {
	until time.Time
	done  chan struct{}
}

func newFakeClock(auto bool) *fakeClock {
	return &fakeClock{slept: make(chan time.Duration, 100), auto: auto, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	if f.auto {
		f.now = f.now.Add(d)
		f.mu.Unlock()
		f.slept <- d
		return nil
	}
	s := fakeSleeper{until: f.now.Add(d), done: make(chan struct{})}
	f.sleepers = append(f.sleepers, s)
	f.mu.Unlock()
	f.slept <- d
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.sleepers[:0]
	for _, s := range f.sleepers {
		if !s.until.After(f.now) {
			close(s.done)
		} else {
			kept = append(kept, s)
		}
	}
	f.sleepers = kept
}

// ctxT is a context that ends with the test, bounded so a hang fails.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
