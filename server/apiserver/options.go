package apiserver

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/wire"
)

// Options configure a server. The zero value (with DataDir set) is a
// secure single-machine server with embedded etcd on https://127.0.0.1:6443.
type Options struct {
	// DataDir holds etcd's data (unless EtcdServers is set), credentials and
	// the kubeconfig. Default "./listwatch-data". The embedded etcd lives in
	// DataDir/etcd with its own CA and certificates (DataDir/etcd/pki) and
	// a lock file that keeps a second server off the directory.
	DataDir string
	// BindAddress to listen on; default 127.0.0.1.
	BindAddress string
	// Port to listen on; default 6443. Use -1 for a free port (tests).
	Port int
	// Hosts are extra names and IPs for the serving certificate.
	Hosts []string

	// EtcdServers, when set, replaces the embedded etcd with a cluster.
	EtcdServers  []string
	EtcdCAFile   string
	EtcdCertFile string
	EtcdKeyFile  string

	// TokenAuthFile is an extra static token file (token,user,uid,"groups").
	// The admin token generated in DataDir is always accepted.
	TokenAuthFile string
	// AuthorizationPolicyFile is an ABAC policy (JSON lines). Without one,
	// only system:masters (the admin) is allowed.
	AuthorizationPolicyFile string

	// DisableAdmission runs no admission webhooks or policies, and so none
	// of the informers (watches over loopback) that feed them.
	DisableAdmission bool

	// In-flight limits (429 beyond), kube's defaults 400 and 200; watches
	// count against MaxWatches (default 10000) instead. system:masters is
	// exempt from all of them.
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	MaxWatches                  int
	// MaxWatchesPerUser caps one user's open watches (429 beyond), so one
	// user cannot take every watch slot; system:masters is exempt.
	// Default 1000.
	MaxWatchesPerUser int
	MaxBodyBytes      int64
	// WatchWriteTimeout disconnects a watcher that has not taken a write
	// for this long; default 60s.
	WatchWriteTimeout time.Duration
	// RequestTimeout bounds non-watch requests; default 60s.
	RequestTimeout time.Duration
	// ReadHeaderTimeout closes connections that have not sent a request's
	// headers in time (slowloris); default 10s.
	ReadHeaderTimeout time.Duration
	// MinRequestTimeout: a watch ends after a random time in [min, 2*min);
	// default 30m.
	MinRequestTimeout time.Duration

	// DisableWatchCache serves LIST and WATCH straight from etcd.
	DisableWatchCache bool
	// CompactionInterval between etcd compactions; default 5m. Negative
	// disables compaction (for another process to do it).
	CompactionInterval time.Duration

	// DisableResponseCompression turns off gzip of responses over 128 KiB
	// to clients that accept it (kube's APIResponseCompression, on by
	// default), and of watch-list streams (kube's WatchListCompression, on
	// by default since 1.37). Worth it when clients are near and CPU is
	// dearer than bytes.
	DisableResponseCompression bool
	// Profiling serves net/http/pprof under /debug/pprof/, to system:masters
	// or whom an ABAC policy grants the path. Off by default (kube: on).
	Profiling bool

	// Controllers chooses the controllers serve runs (package
	// server/controllers), as kube-controller-manager's --controllers:
	// "*" every default one, "name" or "-name" one on or off. Nil means
	// {"*"}; an empty, non-nil list runs none (kube-apiserver alone, as
	// envtest: a deleted namespace then stays Terminating).
	Controllers []string

	// KubeconfigPath to write; default DataDir/kubeconfig.
	KubeconfigPath string

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// ErrOptions wraps every invalid-options error.
var ErrOptions = errors.New("apiserver: invalid options")

func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		o.DataDir = "listwatch-data"
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, errors.Join(ErrOptions, err)
	}
	o.DataDir = abs
	if o.BindAddress == "" {
		o.BindAddress = "127.0.0.1"
	}
	switch {
	case o.Port == 0:
		o.Port = 6443
	case o.Port < 0:
		o.Port = 0
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = wire.MaxRequestBodyBytes
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 60 * time.Second
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.MinRequestTimeout == 0 {
		o.MinRequestTimeout = 30 * time.Minute
	}
	if o.CompactionInterval == 0 {
		o.CompactionInterval = 5 * time.Minute
	}
	if o.KubeconfigPath == "" {
		o.KubeconfigPath = filepath.Join(o.DataDir, "kubeconfig")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Controllers != nil {
		if _, err := controllers.Enabled(o.Controllers); err != nil {
			return o, errors.Join(ErrOptions, fmt.Errorf("--controllers: %w", err))
		}
	}
	if (o.EtcdCertFile == "") != (o.EtcdKeyFile == "") {
		return o, errors.Join(ErrOptions, errors.New("--etcd-certfile and --etcd-keyfile go together"))
	}
	return o, nil
}
