package pki

import (
	"crypto/tls"
	"crypto/x509"
)

// TLSConfig is the server's TLS configuration: TLS 1.2 or later, the serving
// certificate, and client certificates requested but not verified at the
// TLS layer (tls.RequestClientCert), as kube-apiserver does. A certificate
// from another CA, expired, or not for client auth therefore does not abort
// the handshake: the x509 authenticator (auth.X509 with ClientCAPool as
// Roots) verifies it per request and refuses it there, so a request that
// also carries a valid bearer token is still served. The CA is still sent
// as the acceptable-CA hint, so clients pick the right certificate.
func TLSConfig(creds *Credentials) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{creds.Serving},
		ClientAuth:   tls.RequestClientCert,
		ClientCAs:    ClientCAPool(creds),
	}
}

// ClientCAPool is the pool client certificates must chain to: the CA.
func ClientCAPool(creds *Credentials) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(creds.CA)
	return pool
}

// ClientTLSConfig is the client side for the admin: trusts the CA, and
// presents the admin certificate. Handy for tests and `listwatch` commands.
func ClientTLSConfig(creds *Credentials) (*tls.Config, error) {
	pool := x509.NewCertPool()
	pool.AddCert(creds.CA)
	cert, err := tls.X509KeyPair(creds.AdminCertPEM, creds.AdminKeyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{cert}}, nil
}
