package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/server/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestEnsureCredentialsFirstStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	c, err := EnsureCredentials(dir, []string{"example.test", "10.1.2.3", "[fd00::1]"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CAKeyFile, ServingKeyFile, AdminKeyFile, TokenFile} {
		if m := mode(t, c.Path(f)); m != 0o600 {
			t.Errorf("%s mode = %o, want 600", f, m)
		}
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("dir mode = %o, want 700", m)
	}
	pub, ok := c.CA.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("CA key = %T, want ECDSA P-256", c.CA.PublicKey)
	}
	if !c.CA.IsCA || c.CA.NotAfter.Before(time.Now().Add(9*365*24*time.Hour)) {
		t.Errorf("CA: IsCA=%v NotAfter=%v, want a CA for ~10y", c.CA.IsCA, c.CA.NotAfter)
	}
	if d := time.Until(c.ServingCert.NotAfter); d < 360*24*time.Hour || d > 366*24*time.Hour {
		t.Errorf("serving lifetime %v, want ~1y", d)
	}
	for _, h := range []string{"localhost", "example.test"} {
		if err := c.ServingCert.VerifyHostname(h); err != nil {
			t.Errorf("serving cert for %s: %v", h, err)
		}
	}
	for _, ip := range []string{"127.0.0.1", "::1", "10.1.2.3", "fd00::1"} {
		if !slices.ContainsFunc(c.ServingCert.IPAddresses, net.ParseIP(ip).Equal) {
			t.Errorf("serving cert lacks IP %s: %v", ip, c.ServingCert.IPAddresses)
		}
	}
	if !signedBy(c.ServingCert, c.CA, x509.ExtKeyUsageServerAuth, time.Now()) {
		t.Error("serving cert not signed by CA for server auth")
	}
	if !signedBy(c.AdminCert, c.CA, x509.ExtKeyUsageClientAuth, time.Now()) {
		t.Error("admin cert not signed by CA for client auth")
	}
	if c.AdminCert.Subject.CommonName != "admin" || !slices.Equal(c.AdminCert.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin subject = %v", c.AdminCert.Subject)
	}
	if raw, err := hex.DecodeString(c.AdminToken); err != nil || len(raw) != 32 {
		t.Errorf("admin token %q: want 32 bytes of hex", c.AdminToken)
	}
	tf, err := os.Open(c.Path(TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	tokens, err := auth.ParseTokenFile(tf)
	if err != nil {
		t.Fatalf("tokens.csv does not parse as a kube token file: %v", err)
	}
	if tokens.Len() != 1 {
		t.Errorf("tokens.csv has %d tokens, want 1", tokens.Len())
	}
}

func TestEnsureCredentialsReloadKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureCredentials(dir, []string{"example.test"})
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	second, err := EnsureCredentials(dir, []string{"example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if !first.CA.Equal(second.CA) || !first.ServingCert.Equal(second.ServingCert) ||
		!first.AdminCert.Equal(second.AdminCert) || first.AdminToken != second.AdminToken {
		t.Error("second start changed credentials")
	}
	if after := snapshot(t, dir); !equalSnapshots(before, after) {
		t.Error("second start rewrote files")
	}
}

func TestEnsureCredentialsNewHostReissuesServingOnly(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureCredentials(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := EnsureCredentials(dir, []string{"new.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if first.ServingCert.Equal(second.ServingCert) {
		t.Fatal("serving cert not reissued for a new host")
	}
	if err := second.ServingCert.VerifyHostname("new.example.test"); err != nil {
		t.Error(err)
	}
	if !first.CA.Equal(second.CA) || !first.AdminCert.Equal(second.AdminCert) || first.AdminToken != second.AdminToken {
		t.Error("a new host changed the CA, admin cert or token")
	}
}

func TestEnsureCredentialsReissuesExpiringServing(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureCredentials(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ca := &keyPair{Cert: first.CA, Key: first.caKey}
	// Issued 364 days ago: it expires tomorrow, inside renewBefore.
	old, err := newServing(ca, DefaultHosts, time.Now().Add(-364*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := writePair(first, ServingCertFile, ServingKeyFile, old); err != nil {
		t.Fatal(err)
	}
	second, err := EnsureCredentials(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.ServingCert.Equal(old.Cert) {
		t.Fatal("expiring serving cert kept")
	}
	if time.Until(second.ServingCert.NotAfter) < 360*24*time.Hour {
		t.Errorf("reissued cert expires %v", second.ServingCert.NotAfter)
	}
}

func TestEnsureCredentialsRepairsMissingFiles(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureCredentials(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{AdminKeyFile, ServingCertFile} {
		if err := os.Remove(first.Path(f)); err != nil {
			t.Fatal(err)
		}
	}
	second, err := EnsureCredentials(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !first.CA.Equal(second.CA) || first.AdminToken != second.AdminToken {
		t.Error("repair replaced the CA or the token")
	}
	if first.AdminCert.Equal(second.AdminCert) || first.ServingCert.Equal(second.ServingCert) {
		t.Error("damaged pairs were not reissued")
	}
}

func TestEnsureCredentialsKeepsOtherTokens(t *testing.T) {
	dir := t.TempDir()
	existing := `bobtoken,bob,1001,"dev,ops"` + "\n" + `alicetoken,alice,1002` // no trailing newline
	if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := EnsureCredentials(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(c.Path(TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	want := existing + "\n" + c.AdminToken + `,admin,admin,"system:masters"` + "\n"
	if string(data) != want {
		t.Errorf("tokens.csv =\n%s\nwant\n%s", data, want)
	}
	tokens, err := auth.ParseTokenFile(bytes.NewReader(data))
	if err != nil || tokens.Len() != 3 {
		t.Fatalf("ParseTokenFile: %d tokens, %v; want 3", tokens.Len(), err)
	}
}

func TestEnsureCredentialsRefusesToReplaceBadCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := EnsureCredentials(dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CAFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCredentials(dir, nil); !errors.Is(err, ErrBadCA) {
		t.Fatalf("err = %v, want ErrBadCA", err)
	}
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCredentials(dir, nil); !errors.Is(err, ErrBadCA) {
		t.Fatalf("with only ca.crt left: err = %v, want ErrBadCA", err)
	}
}

func TestNormalizeHosts(t *testing.T) {
	got := normalizeHosts([]string{" localhost ", "", "[::1]", "a.test", "a.test", "[fd00::2]"})
	want := []string{"127.0.0.1", "::1", "localhost", "a.test", "fd00::2"}
	if !slices.Equal(got, want) {
		t.Errorf("normalizeHosts = %q, want %q", got, want)
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

func equalSnapshots(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v || strings.HasPrefix(k, ".") {
			return false
		}
	}
	return true
}
