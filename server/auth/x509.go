package auth

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/listwatch/listwatch/server/request"
)

// ErrCertNotVerified means the client presented a certificate that is not
// valid for client authentication: not signed by the CA, expired or not
// yet valid, or not for client auth. The request is not authenticated by
// it, and other authenticators (a bearer token) may still identify it.
var ErrCertNotVerified = errors.New("auth: client certificate presented but not verified")

// X509 authenticates by the client certificate: the user is the leaf's
// Common Name and the groups its Organizations. A certificate with an
// empty CN identifies no one.
//
// With Roots set, X509 verifies the certificate itself, as kube-apiserver's
// x509 authenticator does: the chain (intermediates are the other
// certificates the client sent) up to Roots, the validity period at Now, and
// the client-auth extended key usage. The TLS layer then only requests
// certificates (tls.RequestClientCert), so that a bad certificate does not
// abort the handshake. Without Roots, X509 trusts only chains the TLS layer
// verified (r.TLS.VerifiedChains) and refuses any other certificate.
type X509 struct {
	Roots *x509.CertPool
	// Now is the clock for expiry; default time.Now.
	Now func() time.Time
}

var _ Authenticator = X509{}

// Authenticate implements Authenticator.
func (a X509) Authenticate(r *http.Request) (*request.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf, err := a.verify(r.TLS.PeerCertificates, r.TLS.VerifiedChains)
	if err != nil {
		return nil, false, err
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	return &request.User{
		Name:   leaf.Subject.CommonName,
		Groups: slices.Clone(leaf.Subject.Organization),
	}, true, nil
}

// verify returns the leaf of a chain valid for client auth.
func (a X509) verify(peer []*x509.Certificate, verified [][]*x509.Certificate) (*x509.Certificate, error) {
	if a.Roots == nil {
		if len(verified) == 0 || len(verified[0]) == 0 {
			return nil, ErrCertNotVerified
		}
		return verified[0][0], nil
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	opts := x509.VerifyOptions{
		Roots:         a.Roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range peer[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := peer[0].Verify(opts); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCertNotVerified, err)
	}
	return peer[0], nil
}
