package etcd_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcd"
)

func startEmbedded(t *testing.T, cfg etcd.EmbeddedConfig) *etcd.Embedded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := etcd.StartEmbedded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestRestartKeepsData stops the member and starts it again on the same
// directory: values, revisions and the current revision survive.
func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	e := startEmbedded(t, etcd.EmbeddedConfig{Dir: dir})
	s := etcd.New(e.Client())
	rev1, err := s.Create(ctx, "/registry/pods/default/a", pod("a", ""))
	if err != nil {
		t.Fatal(err)
	}
	rev2, err := s.Create(ctx, "/registry/pods/default/b", pod("b", ""))
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.List(ctx, "/registry/pods/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	e2 := startEmbedded(t, etcd.EmbeddedConfig{Dir: dir})
	s2 := etcd.New(e2.Client())
	after, err := s2.List(ctx, "/registry/pods/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Revision != before.Revision || len(after.Items) != 2 {
		t.Fatalf("after restart: revision %d with %d items, want %d with 2", after.Revision, len(after.Items), before.Revision)
	}
	for i := range after.Items {
		if string(after.Items[i].Value) != string(before.Items[i].Value) || after.Items[i].Revision != before.Items[i].Revision {
			t.Fatalf("item %d: %s@%d, want %s@%d", i, after.Items[i].Value, after.Items[i].Revision, before.Items[i].Value, before.Items[i].Revision)
		}
	}
	if after.Items[0].Revision != rev1 || after.Items[1].Revision != rev2 {
		t.Fatalf("revisions %d,%d want %d,%d", after.Items[0].Revision, after.Items[1].Revision, rev1, rev2)
	}
	rev3, err := s2.Update(ctx, "/registry/pods/default/a", pod("a", `"x":"y"`), rev1)
	if err != nil || rev3 <= rev2 {
		t.Fatalf("update after restart: %d, %v; want a revision after %d", rev3, err, rev2)
	}
}

func TestStartEmbeddedNeedsDir(t *testing.T) {
	_, err := etcd.StartEmbedded(context.Background(), etcd.EmbeddedConfig{})
	if !errors.Is(err, etcd.ErrEmbeddedStart) {
		t.Fatalf("StartEmbedded without Dir: %v, want ErrEmbeddedStart", err)
	}
}

// TestExternalTLS serves the member over TLS with client-certificate
// authentication and connects with Config file paths, as the serve
// command's --etcd-* flags do.
func TestExternalTLS(t *testing.T) {
	t.Parallel()
	certs := writeCerts(t)
	e := startEmbedded(t, etcd.EmbeddedConfig{
		Dir: t.TempDir(),
		TLS: etcd.TLSFiles{CertFile: certs.serverCert, KeyFile: certs.serverKey, CAFile: certs.ca},
	})
	cli, err := etcd.NewClient(etcd.Config{
		Endpoints: e.Endpoints(),
		CAFile:    certs.ca,
		CertFile:  certs.clientCert,
		KeyFile:   certs.clientKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := etcd.New(cli)
	rev, err := s.Create(ctx, "/registry/pods/default/a", pod("a", ""))
	if err != nil {
		t.Fatal(err)
	}
	if kv, err := s.Get(ctx, "/registry/pods/default/a"); err != nil || kv.Revision != rev {
		t.Fatalf("Get over TLS: %+v, %v", kv, err)
	}

	// Without a client certificate the server refuses the request.
	noCert, err := etcd.NewClient(etcd.Config{Endpoints: e.Endpoints(), CAFile: certs.ca, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer noCert.Close()
	short, cancelShort := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelShort()
	if _, err := etcd.New(noCert).Get(short, "/registry/pods/default/a"); err == nil {
		t.Fatal("Get without a client certificate succeeded")
	}

	for name, cfg := range map[string]etcd.Config{
		"no endpoints":  {},
		"cert, no key":  {Endpoints: e.Endpoints(), CertFile: certs.clientCert},
		"missing CA":    {Endpoints: e.Endpoints(), CAFile: filepath.Join(t.TempDir(), "nope")},
		"CA is not PEM": {Endpoints: e.Endpoints(), CAFile: certs.clientKey + ".txt"},
	} {
		if name == "CA is not PEM" {
			if err := os.WriteFile(cfg.CAFile, []byte("hello"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if c, err := etcd.NewClient(cfg); !errors.Is(err, etcd.ErrConfig) {
			if c != nil {
				c.Close()
			}
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}

type certFiles struct{ ca, serverCert, serverKey, clientCert, clientKey string }

// writeCerts makes a CA, a serving certificate for 127.0.0.1 and a
// client certificate, as PEM files in a temporary directory.
func writeCerts(t *testing.T) certFiles {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	f := certFiles{ca: writePEM(t, dir, "ca.crt", "CERTIFICATE", caDER)}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (certPath, keyPath string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			// etcd also dials itself with the serving certificate.
			ExtKeyUsage: []x509.ExtKeyUsage{usage, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(t, dir, name+".crt", "CERTIFICATE", der), writePEM(t, dir, name+".key", "EC PRIVATE KEY", keyDER)
	}
	f.serverCert, f.serverKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	f.clientCert, f.clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return f
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
