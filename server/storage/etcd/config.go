package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Config describes how to reach an external etcd cluster: the serve
// command's --etcd-servers, --etcd-cafile, --etcd-certfile and
// --etcd-keyfile.
type Config struct {
	// Endpoints are the member URLs, "https://host:2379" or "http://…".
	Endpoints []string
	// CAFile verifies the servers' certificates; empty uses the system
	// pool (when TLS is on at all).
	CAFile string
	// CertFile and KeyFile are the client certificate, for clusters that
	// authenticate clients. Both or neither.
	CertFile string
	KeyFile  string
	// DialTimeout bounds the first connection; default 20s, as
	// kube-apiserver.
	DialTimeout time.Duration
	// Logger receives the client's logs; default: none.
	Logger *zap.Logger
}

// ErrConfig: a Config that cannot produce a client.
var ErrConfig = errors.New("etcd: invalid client config")

// NewClient returns a client for cfg. TLS is on when any of the files is
// given. The client connects lazily; the first request waits up to
// DialTimeout.
func NewClient(cfg Config) (*clientv3.Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no endpoints", ErrConfig)
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, fmt.Errorf("%w: a certificate needs its key and a key its certificate", ErrConfig)
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: timeout,
		TLS:         tlsCfg,
		Logger:      lg,
		// Keepalives notice a dead member under an idle watch.
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		// Room for the largest value the server accepts (its body limit)
		// plus the request around it; etcd's own limit still applies and
		// maps to storage.ErrValueTooLarge.
		MaxCallSendMsgSize: MaxValueBytes + 1<<20,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return cli, nil
}

func (cfg Config) tlsConfig() (*tls.Config, error) {
	if cfg.CAFile == "" && cfg.CertFile == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: CA file: %w", ErrConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrConfig, cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate: %w", ErrConfig, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
