package auth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
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
