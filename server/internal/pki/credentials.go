package pki

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File names inside the credentials directory.
const (
	CAFile          = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "serving.crt"
	ServingKeyFile  = "serving.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
	TokenFile       = "tokens.csv"
)

// Identity of the first-start administrator.
const (
	AdminUser  = "admin"
	AdminGroup = "system:masters"
)

// DefaultHosts are always in the serving certificate.
var DefaultHosts = []string{"127.0.0.1", "::1", "localhost"}

// ErrBadCA means the CA files exist but cannot be used. EnsureCredentials
// refuses to replace a CA on its own: every client that trusts it would stop
// working. Remove ca.crt and ca.key to start over.
var ErrBadCA = errors.New("pki: existing CA unusable")

// Credentials is what a server and its first client need. Paths are absolute
// when Dir is.
type Credentials struct {
	Dir string

	CA    *x509.Certificate
	CAPEM []byte

	// Serving is the server's certificate chain and key, ready for tls.Config.
	Serving     tls.Certificate
	ServingCert *x509.Certificate

	AdminCert    *x509.Certificate
	AdminCertPEM []byte
	AdminKeyPEM  []byte
	// AdminToken is the bearer token of user admin in TokenFile.
	AdminToken string

	caKey *ecdsa.PrivateKey
}

// Path returns the path of one of the named files (CAFile, TokenFile, …).
func (c *Credentials) Path(name string) string { return filepath.Join(c.Dir, name) }

// EnsureCredentials creates the credentials in dataDir on first use and loads
// (repairing what is missing or stale) on every later use. hosts are extra
// names or IPs for the serving certificate besides DefaultHosts.
func EnsureCredentials(dataDir string, hosts []string) (*Credentials, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	now := time.Now()
	c := &Credentials{Dir: dataDir}

	ca, fresh, err := ensureCA(c, newCA, now)
	if err != nil {
		return nil, err
	}
	c.CA, c.CAPEM, c.caKey = ca.Cert, ca.CertPEM, ca.Key

	want := normalizeHosts(hosts)
	serving, err := ensureLeaf(c, ServingCertFile, ServingKeyFile, fresh, func(kp *keyPair) bool {
		return signedBy(kp.Cert, ca.Cert, x509.ExtKeyUsageServerAuth, now.Add(renewBefore)) &&
			coversHosts(kp.Cert, want)
	}, func() (*keyPair, error) { return newServing(ca, want, now) })
	if err != nil {
		return nil, err
	}
	c.ServingCert = serving.Cert
	c.Serving = tls.Certificate{
		Certificate: [][]byte{serving.Cert.Raw},
		PrivateKey:  serving.Key,
		Leaf:        serving.Cert,
	}

	admin, err := ensureLeaf(c, AdminCertFile, AdminKeyFile, fresh, func(kp *keyPair) bool {
		return signedBy(kp.Cert, ca.Cert, x509.ExtKeyUsageClientAuth, now.Add(renewBefore)) &&
			kp.Cert.Subject.CommonName == AdminUser &&
			slices.Contains(kp.Cert.Subject.Organization, AdminGroup)
	}, func() (*keyPair, error) { return newClient(ca, AdminUser, []string{AdminGroup}, now) })
	if err != nil {
		return nil, err
	}
	c.AdminCert, c.AdminCertPEM, c.AdminKeyPEM = admin.Cert, admin.CertPEM, admin.KeyPEM

	if c.AdminToken, err = ensureAdminToken(c.Path(TokenFile)); err != nil {
		return nil, err
	}
	return c, nil
}

// ensureCA loads the CA, or makes one with newCA when neither file exists
// (fresh).
func ensureCA(c *Credentials, newCA func(time.Time) (*keyPair, error), now time.Time) (kp *keyPair, fresh bool, err error) {
	certPEM, errC := os.ReadFile(c.Path(CAFile))
	keyPEM, errK := os.ReadFile(c.Path(CAKeyFile))
	if errors.Is(errC, fs.ErrNotExist) && errors.Is(errK, fs.ErrNotExist) {
		if kp, err = newCA(now); err != nil {
			return nil, false, err
		}
		if err = writePair(c, CAFile, CAKeyFile, kp); err != nil {
			return nil, false, err
		}
		return kp, true, nil
	}
	if err = errors.Join(errC, errK); err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrBadCA, err)
	}
	if kp, err = parseKeyPair(certPEM, keyPEM); err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrBadCA, err)
	}
	if !kp.Cert.IsCA || now.After(kp.Cert.NotAfter) {
		return nil, false, fmt.Errorf("%w: not a CA or expired (not after %s)", ErrBadCA, kp.Cert.NotAfter)
	}
	return kp, false, nil
}

// ensureLeaf loads a certificate and key, and issues a new pair when the CA
// is fresh, a file is missing or damaged, or ok rejects what is there.
func ensureLeaf(c *Credentials, certName, keyName string, fresh bool, ok func(*keyPair) bool, issueNew func() (*keyPair, error)) (*keyPair, error) {
	if !fresh {
		certPEM, errC := os.ReadFile(c.Path(certName))
		keyPEM, errK := os.ReadFile(c.Path(keyName))
		if errC == nil && errK == nil {
			if kp, err := parseKeyPair(certPEM, keyPEM); err == nil && ok(kp) {
				return kp, nil
			}
		}
	}
	kp, err := issueNew()
	if err != nil {
		return nil, err
	}
	if err := writePair(c, certName, keyName, kp); err != nil {
		return nil, err
	}
	return kp, nil
}

// writePair writes the key first: a certificate on disk always has its key.
func writePair(c *Credentials, certName, keyName string, kp *keyPair) error {
	if err := writeFileAtomic(c.Path(keyName), kp.KeyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(c.Path(certName), kp.CertPEM, 0o644)
}

// normalizeHosts returns DefaultHosts then hosts, without blanks, brackets
// or duplicates.
func normalizeHosts(hosts []string) []string {
	out := slices.Clone(DefaultHosts)
	for _, h := range hosts {
		h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(h), "["), "]")
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}
