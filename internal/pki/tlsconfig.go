package pki

import (
	"crypto/tls"
	"crypto/x509"
)

// TLSConfig is the server's TLS configuration: TLS 1.2 or later, the serving
// certificate, and client certificates verified against the CA when offered
// (tls.VerifyClientCertIfGiven). A request that brings a certificate from
// another CA fails the handshake; one that brings none goes on to bearer
// token authentication. Verified chains land in http.Request.TLS for the
// x509 authenticator.
func TLSConfig(creds *Credentials) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(creds.CA)
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{creds.Serving},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
	}
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
