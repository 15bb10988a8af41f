package auth

import (
	"errors"
	"net/http"
	"slices"

	"github.com/listwatch/listwatch/server/request"
)

// ErrCertNotVerified means the client presented a certificate the TLS layer
// did not verify; the server's tls.Config must verify client certificates
// (pki.TLSConfig does).
var ErrCertNotVerified = errors.New("auth: client certificate presented but not verified")

// X509 authenticates by the client certificate in r.TLS.VerifiedChains: the
// user is the leaf's Common Name and the groups its Organizations. A
// certificate with an empty CN identifies no one.
type X509 struct{}

var _ Authenticator = X509{}

// Authenticate implements Authenticator.
func (X509) Authenticate(r *http.Request) (*request.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	if len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil, false, ErrCertNotVerified
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	return &request.User{
		Name:   leaf.Subject.CommonName,
		Groups: slices.Clone(leaf.Subject.Organization),
	}, true, nil
}
