// Package pki makes and keeps the credentials a listwatch server needs on
// its first start, so that `listwatch serve` is secure with no setup.
//
// EnsureCredentials owns one directory. The first call creates, in it:
//
//	ca.crt, ca.key           a private CA (ECDSA P-256, 10 years)
//	serving.crt, serving.key the server's certificate, signed by the CA,
//	                         for 127.0.0.1, ::1, localhost and the given hosts (1 year)
//	admin.crt, admin.key     a client certificate: CN "admin", O "system:masters"
//	tokens.csv               Kubernetes' static token file, with one admin token
//
// Later calls load what is there and only repair: a missing or damaged file
// is regenerated, and the serving certificate is reissued when it is (nearly)
// expired or lacks a requested host. The CA is never replaced while its key
// and certificate load, so clients that trust it keep working.
//
// Private keys and the token file are 0600; everything is written to a
// temporary file and renamed, so a crash never leaves half a key behind.
//
// EnsureEtcdPKI does the same for an embedded etcd member, in a directory
// of its own and with a CA of its own (so that no API credential opens the
// store): ca.crt/ca.key, server.crt/server.key for loopback (also a client
// certificate, for peer traffic) and client.crt/client.key, the one client.
// Nobody else trusts that CA, so an unusable one is simply replaced.
//
// WriteKubeconfig turns the credentials into a kubeconfig that kubectl and
// client-go accept (both the token and the client certificate are in it;
// client-go sends both and the server authenticates the certificate first).
// TLSConfig is the server side: TLS 1.2+, the serving certificate, and
// client certificates verified against the CA when a client offers one, so
// certificates and bearer tokens both work.
package pki
