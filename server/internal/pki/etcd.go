package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// File names inside an etcd PKI directory (EnsureEtcdPKI). The CA files
// have the same names as the API's, in a different directory.
const (
	EtcdServerCertFile = "server.crt"
	EtcdServerKeyFile  = "server.key"
	EtcdClientCertFile = "client.crt"
	EtcdClientKeyFile  = "client.key"
)

// EtcdClientName is the common name of the embedded etcd's only client.
const EtcdClientName = "listwatch-etcd-client"

// etcdHosts are the names in the embedded member's certificate: it listens
// on loopback only.
var etcdHosts = []string{"127.0.0.1", "::1", "localhost"}

// EtcdPKI names the files of a private CA for one embedded etcd member, a
// certificate the member serves (client and peer URLs) and the one
// certificate its client presents. Paths are absolute when Dir is.
type EtcdPKI struct {
	Dir            string
	CAFile         string
	ServerCertFile string
	ServerKeyFile  string
	ClientCertFile string
	ClientKeyFile  string
}

// EnsureEtcdPKI creates dir (0700) and the files of an EtcdPKI in it on
// first use, and later loads them, reissuing a leaf that is missing,
// damaged or close to expiry. The CA is separate from the API's: a
// certificate the API CA issues (an admin's, say) gets no access to etcd.
//
// Unlike EnsureCredentials it replaces an unusable CA: only the process
// that calls it trusts this CA, so nothing outside breaks.
func EnsureEtcdPKI(dir string) (*EtcdPKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	// MkdirAll keeps an existing directory's mode; the keys inside are only
	// as private as the directory, so tighten it.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	now := time.Now()
	c := &Credentials{Dir: dir}
	newEtcdCA := func(now time.Time) (*keyPair, error) { return newNamedCA("listwatch-etcd-ca", now) }
	ca, fresh, err := ensureCA(c, newEtcdCA, now)
	if errors.Is(err, ErrBadCA) {
		if ca, err = newEtcdCA(now); err == nil {
			err = writePair(c, CAFile, CAKeyFile, ca)
		}
		fresh = true
	}
	if err != nil {
		return nil, err
	}
	if _, err := ensureLeaf(c, EtcdServerCertFile, EtcdServerKeyFile, fresh, func(kp *keyPair) bool {
		return signedBy(kp.Cert, ca.Cert, x509.ExtKeyUsageServerAuth, now.Add(renewBefore)) &&
			signedBy(kp.Cert, ca.Cert, x509.ExtKeyUsageClientAuth, now.Add(renewBefore)) &&
			coversHosts(kp.Cert, etcdHosts)
	}, func() (*keyPair, error) { return newEtcdServer(ca, now) }); err != nil {
		return nil, err
	}
	if _, err := ensureLeaf(c, EtcdClientCertFile, EtcdClientKeyFile, fresh, func(kp *keyPair) bool {
		return signedBy(kp.Cert, ca.Cert, x509.ExtKeyUsageClientAuth, now.Add(renewBefore)) &&
			kp.Cert.Subject.CommonName == EtcdClientName
	}, func() (*keyPair, error) { return newClient(ca, EtcdClientName, nil, now) }); err != nil {
		return nil, err
	}
	return &EtcdPKI{
		Dir:            dir,
		CAFile:         c.Path(CAFile),
		ServerCertFile: c.Path(EtcdServerCertFile),
		ServerKeyFile:  c.Path(EtcdServerKeyFile),
		ClientCertFile: c.Path(EtcdClientCertFile),
		ClientKeyFile:  c.Path(EtcdClientKeyFile),
	}, nil
}

// newEtcdServer issues the member's certificate for loopback. It is also a
// client certificate: the member presents it when it dials its peers.
func newEtcdServer(ca *keyPair, now time.Time) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "listwatch-etcd"},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(leafLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range etcdHosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue(tmpl, ca)
}
