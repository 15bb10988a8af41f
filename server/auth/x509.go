package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	kubex509 "k8s.io/apiserver/pkg/authentication/request/x509"

	"github.com/listwatch/listwatch/server/request"
)

// ErrCertNotVerified means the client presented a certificate that is not
// valid for client authentication: not signed by the CA, expired or not
// yet valid, or not for client auth. The request is not authenticated by
// it, and other authenticators (a bearer token) may still identify it.
var ErrCertNotVerified = errors.New("auth: client certificate presented but not verified")

// X509 authenticates by the client certificate as kube's x509
// authenticator does: the user is the leaf's Common Name, the groups its
// Organizations, the UID its subject's Kubernetes UID attribute (OID
// 1.3.6.1.4.1.57683.2; a certificate with two, or an empty one, is
// refused), and the extra
// authentication.kubernetes.io/credential-id is "X509SHA256=" and the
// certificate's hex SHA-256. A certificate with an empty CN identifies no
// one.
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
	// Verified, if set, remembers the certificates verified against
	// Roots, so that the requests of one client are not each verified
	// again (NewX509 sets it).
	Verified *VerifiedCerts
}

// NewX509 returns an X509 over roots that remembers what it verified.
func NewX509(roots *x509.CertPool) X509 {
	return X509{Roots: roots, Verified: &VerifiedCerts{}}
}

// VerifiedCerts remembers chains X509 verified: the hash of the
// certificates a client sent, and the period in which the chain found
// for them is valid. A verification costs some 0.1 ms of CPU (ECDSA)
// and kube-apiserver does one per request; with this each client pays it
// once per certificate, and again only once the clock leaves that period.
// The same certificates under the same Roots verify the same way, so the
// answer is the one a fresh verification would give.
//
// Hashing the certificates is itself most of what a remembered chain
// costs a request, and every request on one connection carries the same
// parsed certificates: the hash is remembered by the leaf's
// *x509.Certificate too. The same pointer is the same parsed
// certificate, so the same bytes, and it is kept alive while remembered,
// so it is never another certificate at a reused address; the hash is
// reused only for the very same certificates, in the same order.
type VerifiedCerts struct {
	mu     sync.Mutex
	m      map[[sha256.Size]byte]validity
	byLeaf map[*x509.Certificate]leafKey
}

// leafKey is certsKey of the peer certificates certs.
type leafKey struct {
	certs []*x509.Certificate
	key   [sha256.Size]byte
}

// key is certsKey(peer), remembered by peer[0].
func (v *VerifiedCerts) key(peer []*x509.Certificate) [sha256.Size]byte {
	v.mu.Lock()
	k, ok := v.byLeaf[peer[0]]
	v.mu.Unlock()
	if ok && slices.Equal(k.certs, peer) {
		return k.key
	}
	k = leafKey{certs: slices.Clone(peer), key: certsKey(peer)}
	v.mu.Lock()
	if v.byLeaf == nil || len(v.byLeaf) >= maxVerifiedCerts {
		v.byLeaf = make(map[*x509.Certificate]leafKey)
	}
	v.byLeaf[peer[0]] = k
	v.mu.Unlock()
	return k.key
}

// validity is when a verified chain is valid: every certificate of it is.
type validity struct{ notBefore, notAfter time.Time }

// maxVerifiedCerts bounds VerifiedCerts; when full it starts over.
const maxVerifiedCerts = 4096

func certsKey(peer []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range peer {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(c.Raw)))
		h.Write(n[:])
		h.Write(c.Raw)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

func (v *VerifiedCerts) valid(k [sha256.Size]byte, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.m[k]
	return ok && !now.Before(p.notBefore) && !now.After(p.notAfter)
}

func (v *VerifiedCerts) add(k [sha256.Size]byte, chain []*x509.Certificate) {
	var p validity
	for i, c := range chain {
		if i == 0 || c.NotBefore.After(p.notBefore) {
			p.notBefore = c.NotBefore
		}
		if i == 0 || c.NotAfter.Before(p.notAfter) {
			p.notAfter = c.NotAfter
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxVerifiedCerts {
		v.m = make(map[[sha256.Size]byte]validity)
	}
	v.m[k] = p
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
	// kube's own conversion: the CN, the Organizations, a UID from the
	// subject's UID attribute (AllowParsingUserUIDFromCertAuth, on since
	// 1.33) and the certificate's SHA-256 as the credential id.
	resp, ok, err := kubex509.CommonNameUserConversion([]*x509.Certificate{leaf})
	if !ok || err != nil {
		return nil, false, err
	}
	u := resp.User
	return &request.User{
		Name:   u.GetName(),
		UID:    u.GetUID(),
		Groups: slices.Clone(u.GetGroups()),
		Extra:  u.GetExtra(),
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
	var key [sha256.Size]byte
	if a.Verified != nil {
		key = a.Verified.key(peer)
		if a.Verified.valid(key, now()) {
			return peer[0], nil
		}
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
	chains, err := peer[0].Verify(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCertNotVerified, err)
	}
	if a.Verified != nil && len(chains) > 0 {
		a.Verified.add(key, chains[0])
	}
	return peer[0], nil
}
