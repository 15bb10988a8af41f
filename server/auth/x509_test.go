package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	kubeasn1 "k8s.io/apimachinery/pkg/apis/asn1"

	"github.com/listwatch/listwatch/server/request"
)

func TestX509(t *testing.T) {
	leaf := &x509.Certificate{Subject: pkix.Name{CommonName: "carol", Organization: []string{"dev", "ops"}}}
	noCN := &x509.Certificate{Subject: pkix.Name{Organization: []string{"dev"}}}
	tests := []struct {
		name    string
		state   *tls.ConnectionState
		wantOK  bool
		wantErr error
	}{
		{"plain http", nil, false, nil},
		{"no cert", &tls.ConnectionState{}, false, nil},
		{"verified", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf},
			VerifiedChains: [][]*x509.Certificate{{leaf}}}, true, nil},
		{"unverified", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}, false, ErrCertNotVerified},
		{"empty CN", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{noCN},
			VerifiedChains: [][]*x509.Certificate{{noCN}}}, false, nil},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.TLS = tt.state
		u, ok, err := X509{}.Authenticate(r)
		if ok != tt.wantOK || !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: ok=%v err=%v", tt.name, ok, err)
		}
		if ok && (u.Name != "carol" || !slices.Equal(u.Groups, []string{"dev", "ops"})) {
			t.Errorf("%s: user %+v", tt.name, u)
		}
	}
}

// TestX509UserAsKube: the user carries what kube's x509 authenticator
// gives it: the certificate's SHA-256 as its credential id, its subject's
// UID attribute as the UID, and no user for two UIDs.
func TestX509UserAsKube(t *testing.T) {
	uidOID := kubeasn1.X509UID()
	withUIDs := func(uids ...string) *x509.Certificate {
		name := pkix.Name{CommonName: "carol", Organization: []string{"dev"}}
		for _, uid := range uids {
			name.ExtraNames = append(name.ExtraNames, pkix.AttributeTypeAndValue{Type: uidOID, Value: uid})
		}
		cert, _ := issueTest(t, &x509.Certificate{Subject: name, NotBefore: time.Now().Add(-time.Hour),
			NotAfter: time.Now().Add(time.Hour)}, nil)
		return cert
	}
	auth := func(cert *x509.Certificate) (*request.User, bool, error) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert},
			VerifiedChains: [][]*x509.Certificate{{cert}}}
		return X509{}.Authenticate(r)
	}

	plain := withUIDs()
	u, ok, err := auth(plain)
	sum := sha256.Sum256(plain.Raw)
	wantID := []string{"X509SHA256=" + hex.EncodeToString(sum[:])}
	if !ok || err != nil || u.UID != "" || !slices.Equal(u.Extra["authentication.kubernetes.io/credential-id"], wantID) {
		t.Errorf("no UID: %+v %v %v, want credential id %v", u, ok, err, wantID)
	}
	if u, ok, err := auth(withUIDs("u-1")); !ok || err != nil || u.UID != "u-1" {
		t.Errorf("one UID: %+v %v %v", u, ok, err)
	}
	if u, ok, err := auth(withUIDs("u-1", "u-2")); ok || err == nil {
		t.Errorf("two UIDs: %+v %v %v, want an error", u, ok, err)
	}
}

// testCA issues certificates for the verifying X509 tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	now := time.Now()
	cert, key := issueTest(t, &x509.Certificate{Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil)
	return &testCA{cert: cert, key: key}
}

// issueTest signs tmpl with ca (self-signed when ca is nil).
func issueTest(t *testing.T, tmpl *x509.Certificate, ca *testCA) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestX509VerifiesAgainstRoots(t *testing.T) {
	ca, other := newTestCA(t, "ca"), newTestCA(t, "other")
	now := time.Now()
	leaf := func(ca *testCA, notAfter time.Time, usage x509.ExtKeyUsage) *x509.Certificate {
		c, _ := issueTest(t, &x509.Certificate{Subject: pkix.Name{CommonName: "carol", Organization: []string{"dev", "ops"}},
			NotBefore: now.Add(-2 * time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{usage}}, ca)
		return c
	}
	interCert, interKey := issueTest(t, &x509.Certificate{Subject: pkix.Name{CommonName: "intermediate"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, ca)
	inter := &testCA{cert: interCert, key: interKey}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)

	tests := []struct {
		name  string
		chain []*x509.Certificate
		ok    bool
	}{
		{"valid", []*x509.Certificate{leaf(ca, now.Add(time.Hour), x509.ExtKeyUsageClientAuth)}, true},
		{"via intermediate", []*x509.Certificate{leaf(inter, now.Add(time.Hour), x509.ExtKeyUsageClientAuth), inter.cert}, true},
		{"intermediate not sent", []*x509.Certificate{leaf(inter, now.Add(time.Hour), x509.ExtKeyUsageClientAuth)}, false},
		{"other CA", []*x509.Certificate{leaf(other, now.Add(time.Hour), x509.ExtKeyUsageClientAuth)}, false},
		{"expired", []*x509.Certificate{leaf(ca, now.Add(-time.Hour), x509.ExtKeyUsageClientAuth)}, false},
		{"server usage", []*x509.Certificate{leaf(ca, now.Add(time.Hour), x509.ExtKeyUsageServerAuth)}, false},
		{"self-signed", []*x509.Certificate{leaf(nil, now.Add(time.Hour), x509.ExtKeyUsageClientAuth)}, false},
	}
	// Each case three times: without a cache, then twice with one (the
	// second from it).
	cached := NewX509(roots)
	for _, tt := range tests {
		for i, a := range []X509{{Roots: roots}, cached, cached} {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			// What tls.RequestClientCert leaves: certificates, no verified chains.
			r.TLS = &tls.ConnectionState{PeerCertificates: tt.chain}
			u, ok, err := a.Authenticate(r)
			if ok != tt.ok {
				t.Errorf("%s (%d): ok=%v err=%v, want ok=%v", tt.name, i, ok, err, tt.ok)
			}
			if !tt.ok && !errors.Is(err, ErrCertNotVerified) {
				t.Errorf("%s (%d): err %v, want ErrCertNotVerified", tt.name, i, err)
			}
			if ok && (u.Name != "carol" || !slices.Equal(u.Groups, []string{"dev", "ops"})) {
				t.Errorf("%s (%d): user %+v", tt.name, i, u)
			}
		}
	}
	// The clock is the authenticator's.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf(ca, now.Add(time.Hour), x509.ExtKeyUsageClientAuth)}}
	if _, ok, _ := (X509{Roots: roots, Now: func() time.Time { return now.Add(2 * time.Hour) }}).Authenticate(r); ok {
		t.Error("certificate accepted after its expiry by the authenticator's clock")
	}
}

// A remembered verification holds only while every certificate of the
// chain is valid: past the intermediate's expiry (before the leaf's) the
// same certificates are refused, and a chain sent without its
// intermediate is not taken for the one sent with it.
func TestX509VerifiedCertsExpire(t *testing.T) {
	ca := newTestCA(t, "ca")
	now := time.Now()
	interCert, interKey := issueTest(t, &x509.Certificate{Subject: pkix.Name{CommonName: "intermediate"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, ca)
	leaf, _ := issueTest(t, &x509.Certificate{Subject: pkix.Name{CommonName: "dave"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(3 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, &testCA{cert: interCert, key: interKey})
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	clock := now
	a := NewX509(roots)
	a.Now = func() time.Time { return clock }
	auth := func(chain ...*x509.Certificate) bool {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: chain}
		_, ok, _ := a.Authenticate(r)
		return ok
	}
	if !auth(leaf, interCert) || !auth(leaf, interCert) {
		t.Fatal("valid chain refused")
	}
	if auth(leaf, ca.cert) {
		t.Error("leaf with another certificate in place of its intermediate accepted after the chain was remembered")
	}
	if auth(leaf) {
		t.Error("leaf without its intermediate accepted after the chain was remembered")
	}
	clock = now.Add(2 * time.Hour)
	if auth(leaf, interCert) {
		t.Error("chain accepted after its intermediate expired")
	}
	clock = now
	if !auth(leaf, interCert) {
		t.Error("chain refused once the clock is back in its validity")
	}
}
