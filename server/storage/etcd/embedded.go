package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/listwatch/listwatch/server/internal/pki"
)

// EmbeddedConfig configures an etcd member run inside this process.
type EmbeddedConfig struct {
	// Dir holds the member's data (WAL and snapshots), its private CA and
	// certificates (PKIDir) and its lock file (LockFile). Starting again on
	// the same Dir keeps every key, revision and certificate. Required.
	Dir string
	// ClientAddr is the host:port the client listener binds; the default
	// "127.0.0.1:0" picks a free loopback port. The generated certificate
	// names only loopback addresses: for another address, give TLS.
	ClientAddr string
	// PeerAddr is the host:port of the (unused, single-member) peer
	// listener; the default "127.0.0.1:0" picks a free loopback port.
	PeerAddr string
	// TLS, if its CertFile is set, replaces the generated certificates on
	// the client listener (the peer listener keeps them). The client
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

// PKIDir is the directory inside EmbeddedConfig.Dir that holds the
// member's private CA (ca.crt, ca.key), its certificate (server.crt,
// server.key) and its client's (client.crt, client.key): the directory is
// 0700, keys are 0600. They are made on the first start and reused.
const PKIDir = "pki"

// embeddedCatchUpEntries is how many applied raft entries the embedded
// member keeps in memory after each of its in-memory snapshots (etcd takes
// one every 100 entries): etcd's default. Fewer made a restart panic, now
// and then, in raft ("error scanning unapplied entries [1, 202):
// requested index is unavailable due to compaction"). At a start the
// member replays its log as a follower; etcd applies a batch of replayed
// entries, takes an in-memory snapshot and compacts its raft log to
// catch-up entries before what it applied, while raft itself still counts
// none of that batch applied until the raft goroutine advances; an
// election tick in between scans the batch from raft's own applied index,
// finds it compacted, and panics. With etcd's 5000 the compaction stops
// short of any batch of fewer entries (a batch is at most 1 MiB), as in
// etcd's own tested configuration.
const embeddedCatchUpEntries = etcdserver.DefaultSnapshotCatchUpEntries

// TLSFiles names PEM files for a TLS endpoint.
type TLSFiles struct {
	CertFile string
	KeyFile  string
	// CAFile verifies the peer's certificate. On the embedded server it
	// also turns on client-certificate authentication.
	CAFile string
}

// Embedded is a running single-member etcd and an in-process client of it.
type Embedded struct {
	etcd      *embed.Etcd
	client    *clientv3.Client
	clientCfg Config
	lock      *dirLock
}

// ErrEmbeddedStart: the embedded member did not start.
var ErrEmbeddedStart = errors.New("etcd: embedded member did not start")

// StartEmbedded starts a single-member etcd under cfg.Dir and returns once
// it serves clients. Close stops it.
//
// The member is private to this process: it listens on loopback only, both
// its client and its peer listener speak TLS and require a client
// certificate from a CA generated for it in cfg.Dir, and cfg.Dir is 0700.
// A second StartEmbedded on the same Dir, from any process, fails at once
// with ErrDataDirInUse.
//
// ctx bounds only the start. When ctx ends (or StartTimeout passes) while
// etcd is still opening its files, StartEmbedded returns at once; etcd
// offers no way to interrupt that, so a goroutine waits for it, stops the
// member and only then releases Dir.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: EmbeddedConfig.Dir is empty", ErrEmbeddedStart)
	}
	// etcd wants its directory private (it only warns otherwise); the
	// keys in PKIDir need it.
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, err)
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	return startLocked(ctx, cfg, lock)
}

// startLocked starts the member on a directory whose lock it owns: it
// releases the lock on failure and hands it to the Embedded on success.
func startLocked(ctx context.Context, cfg EmbeddedConfig, lock *dirLock) (*Embedded, error) {
	keys, err := pki.EnsureEtcdPKI(filepath.Join(cfg.Dir, PKIDir))
	if err != nil {
		lock.unlock()
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, err)
	}
	clientTLS := cfg.TLS
	own := clientTLS.CertFile == ""
	if own {
		clientTLS = TLSFiles{CertFile: keys.ServerCertFile, KeyFile: keys.ServerKeyFile, CAFile: keys.CAFile}
	}
	ec, err := embedConfig(cfg, clientTLS, keys)
	if err != nil {
		lock.unlock()
		return nil, err
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()

	e, err := startEtcd(ctx, t.C, ec, lock)
	// The client port embedConfig picked (when any free port would do)
	// may have been taken before etcd bound it: pick another.
	for attempt := 0; errors.Is(err, syscall.EADDRINUSE) && pickedPort(cfg.ClientAddr) && attempt < 8; attempt++ {
		if ec, err = embedConfig(cfg, clientTLS, keys); err != nil {
			lock.unlock()
			return nil, err
		}
		e, err = startEtcd(ctx, t.C, ec, lock)
	}
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			lock.unlock()
		}
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err = <-e.Err():
	case <-t.C:
		err = fmt.Errorf("not ready after %v", timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		closeEtcd(e)
		lock.unlock()
		return nil, fmt.Errorf("%w: %w", ErrEmbeddedStart, err)
	}
	var endpoints []string
	for _, l := range e.Clients {
		if !isHTTPListener(l, ec) {
			endpoints = append(endpoints, "https://"+l.Addr().String())
		}
	}
	clientCfg := Config{Endpoints: endpoints, CAFile: clientTLS.CAFile, CertFile: clientTLS.CertFile, KeyFile: clientTLS.KeyFile}
	if own {
		clientCfg.CertFile, clientCfg.KeyFile = keys.ClientCertFile, keys.ClientKeyFile
	}
	// The server's own client calls the member in-process: etcd's
	// v3client hands each request to the member's gRPC service
	// implementations as a function call, with no TLS, HTTP/2 or
	// protobuf marshalling on either side. That halves the CPU of a
	// create or an update (BenchmarkCreateConfigMap). The listener stays
	// for other clients (ClientConfig), under the same mutual TLS.
	cli := v3client.New(e.Server)
	return &Embedded{etcd: e, client: cli, clientCfg: clientCfg, lock: lock}, nil
}

// abandonedStarts counts the starts startEtcd has given up on and whose
// goroutine is still cleaning up; tests wait for them.
var abandonedStarts sync.WaitGroup

// startEtcd runs embed.StartEtcd, which may block (on a database another
// program holds locked, say) and takes no context. When ctx ends or
// timeout fires first, it returns, and the goroutine running StartEtcd
// stops the member once it has started and only then releases the lock,
// so that no other member opens the files meanwhile. On error the lock is
// released (or left to that goroutine).
func startEtcd(ctx context.Context, timeout <-chan time.Time, ec *embed.Config, lock *dirLock) (*embed.Etcd, error) {
	type result struct {
		e   *embed.Etcd
		err error
	}
	done := make(chan result) // unbuffered: a result is taken or abandoned
	abandoned := make(chan struct{})
	go func() {
		e, err := embed.StartEtcd(ec)
		select {
		case done <- result{e, err}:
		case <-abandoned:
			defer abandonedStarts.Done()
			if err == nil {
				closeEtcd(e)
			}
			lock.unlock()
		}
	}()
	var why error
	select {
	case r := <-done:
		// A bind error leaves the lock to the caller, which may try
		// another port.
		if r.err != nil && !errors.Is(r.err, syscall.EADDRINUSE) {
			lock.unlock()
		}
		return r.e, r.err
	case <-ctx.Done():
		why = ctx.Err()
	case <-timeout:
		why = errors.New("etcd did not open its data in time")
	}
	abandonedStarts.Add(1)
	close(abandoned)
	return nil, why
}

// closeEtcd stops a started member and waits until it has.
func closeEtcd(e *embed.Etcd) {
	e.Close()
	<-e.Server.StopNotify()
}

func embedConfig(cfg EmbeddedConfig, clientTLS TLSFiles, keys *pki.EtcdPKI) (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Dir = cfg.Dir
	ec.Name = "listwatch"
	clientAddr, peerAddr := cfg.ClientAddr, cfg.PeerAddr
	if clientAddr == "" {
		clientAddr = "127.0.0.1:0"
	}
	// etcd serves gRPC natively (grpc-go's own HTTP/2 transport) only on
	// client URLs that serve nothing else; a listener shared with its
	// HTTP endpoints (health, metrics, version) routes every call through
	// grpc-go's ServeHTTP, which costs this server's writes about a
	// fifth of their CPU. So the HTTP endpoints get a listener of their
	// own, on a loopback port of their own, under the same mutual TLS.
	// etcd tells listeners apart by address, so a client address asking
	// for any free port is given a definite one first.
	if host, port, err := net.SplitHostPort(clientAddr); err == nil && port == "0" {
		p, err := freePort(host)
		if err != nil {
			return nil, fmt.Errorf("%w: client address: %w", ErrEmbeddedStart, err)
		}
		clientAddr = net.JoinHostPort(host, p)
	}
	if peerAddr == "" {
		peerAddr = "127.0.0.1:0"
	}
	ec.ClientTLSInfo.CertFile = clientTLS.CertFile
	ec.ClientTLSInfo.KeyFile = clientTLS.KeyFile
	if clientTLS.CAFile != "" {
		ec.ClientTLSInfo.TrustedCAFile = clientTLS.CAFile
		ec.ClientTLSInfo.ClientCertAuth = true
	}
	// Nothing ever joins this single member, but the peer listener is
	// there all the same (etcd requires one) and answers membership and
	// lease requests: the same mutual TLS keeps it to this process.
	ec.PeerTLSInfo.CertFile = keys.ServerCertFile
	ec.PeerTLSInfo.KeyFile = keys.ServerKeyFile
	ec.PeerTLSInfo.TrustedCAFile = keys.CAFile
	ec.PeerTLSInfo.ClientCertAuth = true
	cu, err := url.Parse("https://" + clientAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: client address: %w", ErrEmbeddedStart, err)
	}
	pu, err := url.Parse("https://" + peerAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: peer address: %w", ErrEmbeddedStart, err)
	}
	ec.ListenClientUrls = []url.URL{*cu}
	ec.ListenClientHttpUrls = []url.URL{{Scheme: "https", Host: httpAddr(cu.Hostname())}}
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
	// A single member elects itself once its election timeout passes:
	// etcd fast-forwards all but one tick of it, and raft randomizes the
	// timeout between one and two times ElectionMs, so the member waits
	// one to ElectionMs/TickMs+1 ticks before it serves (100–1000 ms with
	// etcd's 100 ms ticks and 1 s timeout, the bulk of a start). No peer
	// ever joins, so heartbeats cross no network and short ticks cost
	// only the ticker: 20 ms ticks and a 100 ms timeout make the wait
	// 20–100 ms.
	ec.TickMs, ec.ElectionMs = 20, 100
	// etcd keeps the newest SnapshotCatchUpEntries raft entries in memory
	// (for a follower that fell behind; this member never has one): no
	// fewer than etcd's default, see embeddedCatchUpEntries.
	ec.SnapshotCatchUpEntries = embeddedCatchUpEntries
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

// pickedPort reports whether the client address leaves the port to us.
func pickedPort(clientAddr string) bool {
	if clientAddr == "" {
		return true
	}
	_, port, err := net.SplitHostPort(clientAddr)
	return err == nil && port == "0"
}

// freePort returns a port free on host now. etcd binds it moments later;
// were it taken in between, the start fails with EADDRINUSE and
// startLocked picks again. A variable for tests.
var freePort = func(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, errors.Join(err, l.Close())
}

// httpAddr is where the member's HTTP endpoints listen: a free port on
// the client host.
func httpAddr(host string) string { return net.JoinHostPort(host, "0") }

// isHTTPListener tells the listener of the member's HTTP endpoints from
// its gRPC listeners: only it can have a port the configuration left
// free.
func isHTTPListener(l net.Listener, ec *embed.Config) bool {
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		return false
	}
	for _, u := range ec.ListenClientUrls {
		if u.Port() == port {
			return false
		}
	}
	return true
}

// Client returns the in-process client of the member; Close closes it.
func (e *Embedded) Client() *clientv3.Client { return e.client }

// Endpoints returns the member's client URLs, e.g. "https://127.0.0.1:40123".
func (e *Embedded) Endpoints() []string { return e.clientCfg.Endpoints }

// ClientConfig is how another client reaches the member over the
// network: the endpoints and the certificate files.
func (e *Embedded) ClientConfig() Config { return e.clientCfg }

// Close closes the client, stops the member and returns once its
// goroutines and listeners are gone, then releases Dir. It is safe to
// call more than once.
func (e *Embedded) Close() error {
	var err error
	if e.client != nil {
		// An in-process client's Close reports the cancellation of
		// its own context.
		if err = e.client.Close(); errors.Is(err, context.Canceled) {
			err = nil
		}
		e.client = nil
	}
	if e.etcd != nil {
		closeEtcd(e.etcd)
		e.etcd = nil
	}
	e.lock.unlock()
	return err
}

// dropShutdownNoise hides the errors etcd logs on every orderly Close
// ("setting up serving … failed: … closed"), which would otherwise
// drown the real ones, and one harmless error of a fresh member (see
// Write).
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
	// A member that is written to within moments of its start may try to
	// record its storage version before its first commit has saved the
	// raft term, and logs an error it retries on its own; etcd's
	// maintainers call it harmless (etcd-io/etcd#18978).
	if e.Message == "failed to update storage version" {
		for _, fl := range fields {
			if err, ok := fl.Interface.(error); ok && strings.Contains(err.Error(), "missing term information") {
				return nil
			}
		}
	}
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
