package apiserver

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/server/auth"
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
	// AuthorizationModes is kube-apiserver's --authorization-mode: the
	// authorizers asked in order after system:masters (always allowed),
	// among RBAC, ABAC, AlwaysAllow and AlwaysDeny (Node and Webhook are
	// refused). Nil means RBAC, or RBAC,ABAC when AuthorizationPolicyFile
	// is set (a policy file without a mode keeps working); as in kube, an
	// explicit list has ABAC if and only if there is a policy file.
	AuthorizationModes []string
	// AuthorizationPolicyFile is an ABAC policy (JSON lines), for mode ABAC.
	AuthorizationPolicyFile string

	// ServiceAccountIssuers are kube's --service-account-issuer: the first
	// is the iss of the tokens issued, all are accepted. Default
	// DefaultServiceAccountIssuer.
	ServiceAccountIssuers []string
	// ServiceAccountSigningKeyFile is the PEM private key tokens are
	// signed with (kube's --service-account-signing-key-file). Default: a
	// key generated in DataDir (ServiceAccountKeyFile) on first start.
	ServiceAccountSigningKeyFile string
	// ServiceAccountKeyFiles hold more PEM keys (public or private) that
	// tokens may be signed with (kube's --service-account-key-file); the
	// signing key's is always accepted.
	ServiceAccountKeyFiles []string
	// ServiceAccountMaxTokenExpiration caps TokenRequests'
	// expirationSeconds (kube's --service-account-max-token-expiration);
	// 0: no cap.
	ServiceAccountMaxTokenExpiration time.Duration
	// ServiceAccountJWKSURI overrides the jwks_uri of the OIDC discovery
	// document (kube's --service-account-jwks-uri); default
	// https://<server address>/openid/v1/jwks.
	ServiceAccountJWKSURI string
	// APIAudiences are the audiences a token must have to be accepted
	// (kube's --api-audiences); default the issuers.
	APIAudiences []string
	// DisableAdmission runs no admission webhooks or policies, and so none
	// of the informers (watches over loopback) that feed them.
	DisableAdmission bool
	// EnableAdmissionPlugins and DisableAdmissionPlugins add kube's
	// built-in admission plugins to the defaults (kube-apiserver's, but
	// ServiceAccount) or take them away, as kube-apiserver's
	// --enable-admission-plugins and --disable-admission-plugins.
	EnableAdmissionPlugins, DisableAdmissionPlugins []string

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
	// or whom RBAC (or an ABAC policy) grants the path. Off by default (kube: on).
	Profiling bool

	// Controllers chooses the controllers serve runs (package
	// server/controllers), as kube-controller-manager's --controllers:
	// "*" every default one, "name" or "-name" one on or off. Nil means
	// {"*"}; an empty, non-nil list runs none (kube-apiserver alone, as
	// envtest: a deleted namespace then stays Terminating).
	Controllers []string

	// ServiceClusterIPRange is the CIDR Services' cluster IPs come from
	// (kube's --service-cluster-ip-range): the default ServiceCIDR
	// "kubernetes". Default DefaultServiceClusterIPRange.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the range node ports come from (kube's
	// --service-node-port-range), "min-max". Default
	// DefaultServiceNodePortRange.
	ServiceNodePortRange string

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
	if len(o.ServiceAccountIssuers) == 0 {
		o.ServiceAccountIssuers = []string{DefaultServiceAccountIssuer}
	}
	if len(o.APIAudiences) == 0 {
		o.APIAudiences = slices.Clone(o.ServiceAccountIssuers)
	}
	if o.ServiceAccountMaxTokenExpiration < 0 {
		return o, errors.Join(ErrOptions, errors.New("--service-account-max-token-expiration must not be negative"))
	}
	if o.ServiceClusterIPRange == "" {
		o.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if o.ServiceNodePortRange == "" {
		o.ServiceNodePortRange = DefaultServiceNodePortRange
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
	if o.AuthorizationModes == nil {
		o.AuthorizationModes = auth.DefaultModes(o.AuthorizationPolicyFile != "")
	}
	if err := auth.ValidateModes(o.AuthorizationModes, o.AuthorizationPolicyFile != ""); err != nil {
		return o, errors.Join(ErrOptions, err)
	}
	if (o.EtcdCertFile == "") != (o.EtcdKeyFile == "") {
		return o, errors.Join(ErrOptions, errors.New("--etcd-certfile and --etcd-keyfile go together"))
	}
	return o, nil
}
