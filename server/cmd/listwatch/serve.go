package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/listwatch/listwatch/server/apiserver"
	ctrls "github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/server/internal/gctune"
	"github.com/listwatch/listwatch/server/storage/cache"
)

func newServeCommand() *cobra.Command {
	var (
		o           apiserver.Options
		logLevel    string
		controllers string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a Kubernetes-compatible API server on etcd",
		Long: `Run a Kubernetes-compatible API server. By default it stores data in an
embedded etcd under --data-dir, listens on https://127.0.0.1:6443, and writes
an admin kubeconfig to <data-dir>/kubeconfig for kubectl and client-go.

Unless GOGC is set in the environment, serve sets Go's garbage collector
target after each collection: 75% headroom for the heap other than the
watch caches' object bytes, 10% for those (bytes a collection does not
scan). With 100,000 ConfigMaps that is GOGC 38 and a resident set after
the fill about a seventh smaller than at a fixed 75, for CPU within the
noise of a fixed 75's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			defer tuneGC()()
			o.Controllers = splitControllers(controllers)
			o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			// Kubernetes' libraries inside the server (discovery, …) log
			// through klog: into the same structured log.
			klog.SetSlogLogger(o.Logger.With("component", "k8s.io"))
			// The Go runtime's and the process's metrics are kube's, in
			// the legacy registry /metrics also serves.
			o.Registerer = prometheus.NewRegistry()
			srv, err := apiserver.New(o)
			if err != nil {
				return err
			}
			return runServer(cmd.Context(), srv, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", "listwatch-data", "directory for etcd data, credentials and the kubeconfig")
	f.StringVar(&o.BindAddress, "bind-address", "127.0.0.1", "address to listen on")
	f.IntVar(&o.Port, "secure-port", 6443, "HTTPS port (-1: any free port)")
	f.StringSliceVar(&o.Hosts, "tls-san", nil, "extra host names or IPs for the serving certificate")
	f.StringSliceVar(&o.EtcdServers, "etcd-servers", nil, "external etcd endpoints (default: embedded etcd)")
	f.StringVar(&o.EtcdCAFile, "etcd-cafile", "", "CA file to verify external etcd servers")
	f.StringVar(&o.EtcdCertFile, "etcd-certfile", "", "client certificate for external etcd")
	f.StringVar(&o.EtcdKeyFile, "etcd-keyfile", "", "client key for external etcd")
	f.StringVar(&o.TokenAuthFile, "token-auth-file", "", "extra static token file (token,user,uid,\"group1,group2\")")
	f.StringSliceVar(&o.ServiceAccountIssuers, "service-account-issuer", nil, "issuer of service-account tokens (repeatable: the first signs, all are accepted; default "+apiserver.DefaultServiceAccountIssuer+")")
	f.StringVar(&o.ServiceAccountSigningKeyFile, "service-account-signing-key-file", "", "PEM private key that signs service-account tokens (default: one generated in <data-dir>/"+apiserver.ServiceAccountKeyFile+")")
	f.StringSliceVar(&o.ServiceAccountKeyFiles, "service-account-key-file", nil, "PEM files of more keys (public or private) service-account tokens may be signed with")
	f.DurationVar(&o.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", 0, "cap on the lifetime of tokens issued by TokenRequests (0: none)")
	f.StringVar(&o.ServiceAccountJWKSURI, "service-account-jwks-uri", "", "jwks_uri of the OIDC discovery document (default https://<server address>/openid/v1/jwks)")
	f.StringSliceVar(&o.APIAudiences, "api-audiences", nil, "audiences of tokens meant for this server (default: the service-account issuers)")
	f.StringSliceVar(&o.AuthorizationModes, "authorization-mode", nil, "ordered authorizers after system:masters (always allowed), comma separated: RBAC, ABAC, AlwaysAllow, AlwaysDeny (default RBAC, or RBAC,ABAC with --authorization-policy-file)")
	f.StringSliceVar(&o.EnableAdmissionPlugins, "enable-admission-plugins", nil, "kube's admission plugins to run besides the defaults (kube-apiserver's, but ServiceAccount, as envtest), comma separated")
	f.StringSliceVar(&o.DisableAdmissionPlugins, "disable-admission-plugins", nil, "kube's default admission plugins not to run, comma separated")
	f.StringVar(&o.AuthorizationPolicyFile, "authorization-policy-file", "", "ABAC policy file (JSON lines), for --authorization-mode ABAC")
	f.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", 400, "maximum concurrent non-mutating requests (429 beyond)")
	f.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", 200, "maximum concurrent mutating requests (429 beyond)")
	f.IntVar(&o.MaxWatches, "max-watches", 10000, "maximum open watches (429 beyond; system:masters exempt)")
	f.IntVar(&o.MaxWatchesPerUser, "max-watches-per-user", 1000, "maximum open watches of one user (429 beyond; system:masters exempt)")
	f.DurationVar(&o.WatchWriteTimeout, "watch-write-timeout", 60*time.Second, "disconnect a watcher that has not taken a write for this long")
	f.DurationVar(&o.RequestTimeout, "request-timeout", 60*time.Second, "timeout of non-watch requests")
	f.DurationVar(&o.MinRequestTimeout, "min-request-timeout", 30*time.Minute, "watches end after a random time between this and twice this")
	f.BoolVar(&o.DisableWatchCache, "disable-watch-cache", false, "serve LIST and WATCH straight from etcd")
	f.BoolVar(&o.DisableResponseCompression, "disable-response-compression", false, "never gzip responses (default: gzip those over 128 KiB, and watch-list streams, to clients that accept it)")
	f.BoolVar(&o.Profiling, "profiling", false, "serve net/http/pprof under /debug/pprof/ (system:masters, or as RBAC or the ABAC policy grants)")
	f.DurationVar(&o.CompactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often etcd history is compacted (negative: never)")
	f.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", apiserver.DefaultServiceClusterIPRange, "CIDR Services' cluster IPs are allocated from (the default ServiceCIDR)")
	f.StringVar(&o.ServiceNodePortRange, "service-node-port-range", apiserver.DefaultServiceNodePortRange, "port range node ports are allocated from")
	f.StringVar(&o.KubeconfigPath, "kubeconfig-out", "", "where to write the admin kubeconfig (default <data-dir>/kubeconfig)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&controllers, "controllers", "*", "controllers to run, as kube-controller-manager's: '*' all defaults, 'name' or '-name' one on or off, comma separated; empty for none (kube-apiserver alone, as envtest). Known: "+strings.Join(ctrls.Names(), ", "))
	return cmd
}

// defaultGCPercent and cachedGCPercent are serve's garbage collection
// targets when its environment sets no GOGC: the heap may grow by 75% of
// its live bytes other than the watch caches' values, and by 10% of those,
// before the next collection (internal/gctune sets the one GOGC that adds
// up to that after each collection).
//
// Most of a serving heap is the watch caches: every object's encoding,
// held for as long as the object lives, as pointer-free bytes the
// collector does not scan. The pages a heap grows into stay resident (the
// runtime keeps about a heap goal's worth), so headroom earned by those
// bytes is memory kept for collections of the rest. With 100,000
// ConfigMaps (320 MB live at the time) Go's default of 100 kept 660–790
// MiB resident and a fixed 75 646–660 MiB. With the tuner (GOGC 38 at
// that size, 75 for a small heap) serve held 537–556 MiB after the fill
// against 624–628 at a fixed 75, for CPU within the noise: 58.8–68.2 s
// against 59.1–64.5 s over the fill (README, "Server memory"). GOGC in the
// environment (any value, "off" too) turns the tuner off and is kept.
const (
	defaultGCPercent = 75
	cachedGCPercent  = 10
)

// tuneGC starts the collector's tuner, unless the environment sets GOGC,
// and returns what stops it.
func tuneGC() (stop func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	return gctune.Start(gctune.Config{Base: defaultGCPercent, Cached: cachedGCPercent, CachedBytes: cache.HeldValueBytes})
}

// splitControllers splits the --controllers list; "" is none.
func splitControllers(s string) []string {
	out := []string{}
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// stopGrace is how long serve waits, after SIGTERM or SIGINT, for the
// server to stop (its HTTP shutdown takes up to 10s) before it gives up
// and exits anyway: a signal always ends serve.
const stopGrace = 30 * time.Second

// runServer runs srv until ctx ends (a signal) and returns nil when it
// stopped because of the signal, at any point of its start, including
// while etcd is still starting.
func runServer(ctx context.Context, srv *apiserver.APIServer, out io.Writer) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
		fmt.Fprintf(out, "listwatch serving at %s\nkubeconfig: %s\n  export KUBECONFIG=%s\n",
			srv.URL(), srv.KubeconfigPath(), srv.KubeconfigPath())
	case <-ctx.Done():
	case err := <-errc:
		return stopped(ctx, err)
	}
	select {
	case err := <-errc:
		return stopped(ctx, err)
	case <-ctx.Done():
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case err := <-errc:
		return stopped(ctx, err)
	case <-t.C:
		return fmt.Errorf("still stopping %v after the signal; exiting anyway", stopGrace)
	}
}

// stopped is the result of serve for Run's result err: an error that only
// says ctx ended is the signal's doing, not a failure.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
