package pki

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEnsureEtcdPKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd-pki")
	// An existing, looser directory is tightened.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := EnsureEtcdPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("dir mode %o, want 700", m)
	}
	for _, f := range []string{filepath.Join(dir, CAKeyFile), p.ServerKeyFile, p.ClientKeyFile} {
		if m := mode(t, f); m != 0o600 {
			t.Errorf("%s mode %o, want 600", f, m)
		}
	}
	ca := loadPair(t, p.CAFile, filepath.Join(dir, CAKeyFile))
	if !strings.HasPrefix(ca.Cert.Subject.CommonName, "listwatch-etcd-ca@") {
		t.Errorf("CA name %q", ca.Cert.Subject.CommonName)
	}
	server := loadPair(t, p.ServerCertFile, p.ServerKeyFile)
	client := loadPair(t, p.ClientCertFile, p.ClientKeyFile)
	now := time.Now()
	if !signedBy(server.Cert, ca.Cert, x509.ExtKeyUsageServerAuth, now) || !coversHosts(server.Cert, etcdHosts) {
		t.Errorf("server certificate: not a loopback server certificate of the CA")
	}
	if !signedBy(client.Cert, ca.Cert, x509.ExtKeyUsageClientAuth, now) || client.Cert.Subject.CommonName != EtcdClientName {
		t.Errorf("client certificate: %v", client.Cert.Subject)
	}
	if signedBy(client.Cert, ca.Cert, x509.ExtKeyUsageServerAuth, now) {
		t.Error("client certificate also serves")
	}

	// The API's CA is another CA: its certificates do not open etcd.
	api, err := EnsureCredentials(filepath.Join(t.TempDir(), "api"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if signedBy(api.AdminCert, ca.Cert, x509.ExtKeyUsageClientAuth, now) {
		t.Error("the API's admin certificate verifies against the etcd CA")
	}

	// A second call reuses every file.
	before := readAll(t, dir)
	if _, err := EnsureEtcdPKI(dir); err != nil {
		t.Fatal(err)
	}
	for name, b := range readAll(t, dir) {
		if !bytes.Equal(b, before[name]) {
			t.Errorf("%s rewritten by a second call", name)
		}
	}

	// A damaged leaf is reissued under the same CA; a damaged CA is
	// replaced (only this process trusts it) and the leaves with it.
	if err := os.WriteFile(p.ClientCertFile, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureEtcdPKI(dir); err != nil {
		t.Fatal(err)
	}
	if c := loadPair(t, p.ClientCertFile, p.ClientKeyFile); !signedBy(c.Cert, ca.Cert, x509.ExtKeyUsageClientAuth, now) {
		t.Error("reissued client certificate not signed by the CA")
	}
	if err := os.WriteFile(filepath.Join(dir, CAKeyFile), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureEtcdPKI(dir); err != nil {
		t.Fatalf("damaged CA: %v", err)
	}
	ca2 := loadPair(t, p.CAFile, filepath.Join(dir, CAKeyFile))
	if ca2.Cert.Equal(ca.Cert) {
		t.Error("damaged CA kept")
	}
	if s := loadPair(t, p.ServerCertFile, p.ServerKeyFile); !signedBy(s.Cert, ca2.Cert, x509.ExtKeyUsageServerAuth, now) {
		t.Error("server certificate not reissued under the new CA")
	}
}

func loadPair(t *testing.T, certFile, keyFile string) *keyPair {
	t.Helper()
	c, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := parseKeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}
