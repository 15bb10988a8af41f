package etcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// EmbeddedConfig configures an etcd member run inside this process.
type EmbeddedConfig struct {
	// Dir holds the member's data (WAL and snapshots). Starting again on
	// the same Dir keeps every key and revision. Required.
	Dir string
	// ClientAddr is the host:port the client listener binds; the default
	// "127.0.0.1:0" picks a free loopback port.
	ClientAddr string
	// PeerAddr is the host:port of the (unused, single-member) peer
	// listener; the default "127.0.0.1:0" picks a free loopback port.
	PeerAddr string
	// TLS, if its CertFile is set, serves clients over HTTPS. The client
	// returned by Client uses the same files to connect.
	TLS TLSFiles
	// ProgressNotifyInterval is how often etcd sends progress
	// notifications to idle progress-enabled watches; the default is 5s
	// (etcd's own default, 10m, makes watch bookmarks useless).
	ProgressNotifyInterval time.Duration
	// StartTimeout bounds the wait for the member to become ready;
	// default 60s.
	StartTimeout time.Duration
	// Logger receives etcd's logs; the default logs errors to stderr.
	Logger *zap.Logger
}

// TLSFiles names PEM files for a TLS endpoint.
type TLSFiles struct {
	CertFile string
	KeyFile  string
	// CAFile verifies the peer's certificate. On the embedded server it
	// also turns on client-certificate authentication.
	CAFile string
}

// Embedded is a running single-member etcd and a client connected to it.
type Embedded struct {
	etcd      *embed.Etcd
	client    *clientv3.Client
	endpoints []string
}

// ErrEmbeddedStart: the embedded member did not become ready.
var ErrEmbeddedStart = errors.New("etcd: embedded member did not start")

// StartEmbedded starts a single-member etcd under cfg.Dir and returns once
// it serves clients. Close stops it. ctx bounds only the start.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: EmbeddedConfig.Dir is empty", ErrEmbeddedStart)
	}
	ec, err := embedConfig(cfg)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, err)
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, err)
	case <-t.C:
		e.Close()
		return nil, fmt.Errorf("%w: not ready after %v", ErrEmbeddedStart, timeout)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, ctx.Err())
	}
	scheme := "http"
	if cfg.TLS.CertFile != "" {
		scheme = "https"
	}
	var endpoints []string
	for _, l := range e.Clients {
		endpoints = append(endpoints, scheme+"://"+l.Addr().String())
	}
	cli, err := NewClient(Config{
		Endpoints: endpoints,
		CAFile:    cfg.TLS.CAFile,
		CertFile:  cfg.TLS.CertFile,
		KeyFile:   cfg.TLS.KeyFile,
	})
	if err != nil {
		e.Close()
		return nil, err
	}
	return &Embedded{etcd: e, client: cli, endpoints: endpoints}, nil
}

func embedConfig(cfg EmbeddedConfig) (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Dir = cfg.Dir
	ec.Name = "listwatch"
	clientAddr, peerAddr := cfg.ClientAddr, cfg.PeerAddr
	if clientAddr == "" {
		clientAddr = "127.0.0.1:0"
	}
	if peerAddr == "" {
		peerAddr = "127.0.0.1:0"
	}
	scheme := "http"
	if cfg.TLS.CertFile != "" {
		scheme = "https"
		ec.ClientTLSInfo.CertFile = cfg.TLS.CertFile
		ec.ClientTLSInfo.KeyFile = cfg.TLS.KeyFile
		if cfg.TLS.CAFile != "" {
			ec.ClientTLSInfo.TrustedCAFile = cfg.TLS.CAFile
			ec.ClientTLSInfo.ClientCertAuth = true
		}
	}
	cu, err := url.Parse(scheme + "://" + clientAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: client address: %w", ErrEmbeddedStart, err)
	}
	pu, err := url.Parse("http://" + peerAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: peer address: %w", ErrEmbeddedStart, err)
	}
	ec.ListenClientUrls = []url.URL{*cu}
	ec.AdvertiseClientUrls = []url.URL{*cu}
	ec.ListenPeerUrls = []url.URL{*pu}
	ec.AdvertisePeerUrls = []url.URL{*pu}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	// The HTTP gateway and metrics listener would only add goroutines.
	ec.EnableGRPCGateway = false
	// etcd refuses requests over 1.5 MiB by default; the API server
	// accepts bodies up to 3 MiB, so the embedded member takes values as
	// large as that.
	ec.MaxRequestBytes = MaxValueBytes + 1<<20
	ec.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	if ec.WatchProgressNotifyInterval <= 0 {
		ec.WatchProgressNotifyInterval = 5 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		zc := zap.NewProductionConfig()
		zc.Level = zap.NewAtomicLevelAt(zapcore.ErrorLevel)
		zc.Sampling = nil
		var err error
		if lg, err = zc.Build(zap.WrapCore(dropShutdownNoise)); err != nil {
			return nil, fmt.Errorf("%w: logger: %w", ErrEmbeddedStart, err)
		}
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	return ec, nil
}

// Client returns the client connected to the member; Close closes it.
func (e *Embedded) Client() *clientv3.Client { return e.client }

// Endpoints returns the member's client URLs, e.g. "http://127.0.0.1:40123".
func (e *Embedded) Endpoints() []string { return e.endpoints }

// Close closes the client, stops the member and returns once its
// goroutines and listeners are gone. It is safe to call more than once.
func (e *Embedded) Close() error {
	var err error
	if e.client != nil {
		err = e.client.Close()
		e.client = nil
	}
	if e.etcd != nil {
		e.etcd.Close()
		<-e.etcd.Server.StopNotify()
		e.etcd = nil
	}
	return err
}

// dropShutdownNoise hides the errors etcd logs on every orderly Close
// ("setting up serving … failed: … closed"), which would otherwise
// drown the real ones.
func dropShutdownNoise(c zapcore.Core) zapcore.Core { return shutdownFilter{c} }

type shutdownFilter struct{ zapcore.Core }

func (f shutdownFilter) With(fields []zapcore.Field) zapcore.Core {
	return shutdownFilter{f.Core.With(fields)}
}

func (f shutdownFilter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if f.Enabled(e.Level) {
		return ce.AddCore(e, f)
	}
	return ce
}

func (f shutdownFilter) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if strings.HasPrefix(e.Message, "setting up serving from embedded etcd failed") {
		for _, fl := range fields {
			if err, ok := fl.Interface.(error); ok && isClosedError(err) {
				return nil
			}
		}
	}
	return f.Core.Write(e, fields)
}

func isClosedError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "closed")
}
