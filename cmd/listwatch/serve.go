package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/apiserver"
)

func newServeCommand() *cobra.Command {
	var (
		o        apiserver.Options
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a Kubernetes-compatible API server on etcd",
		Long: `Run a Kubernetes-compatible API server. By default it stores data in an
embedded etcd under --data-dir, listens on https://127.0.0.1:6443, and writes
an admin kubeconfig to <data-dir>/kubeconfig for kubectl and client-go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			o.Registerer = reg
			srv, err := apiserver.New(o)
			if err != nil {
				return err
			}
			errc := make(chan error, 1)
			go func() { errc <- srv.Run(cmd.Context()) }()
			select {
			case <-srv.Ready():
				fmt.Fprintf(cmd.OutOrStdout(), "listwatch serving at %s\nkubeconfig: %s\n  export KUBECONFIG=%s\n",
					srv.URL(), srv.KubeconfigPath(), srv.KubeconfigPath())
			case err := <-errc:
				return err
			}
			return <-errc
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
	f.StringVar(&o.AuthorizationPolicyFile, "authorization-policy-file", "", "ABAC policy file (JSON lines); without it only system:masters is allowed")
	f.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", 400, "maximum concurrent non-mutating requests (429 beyond)")
	f.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", 200, "maximum concurrent mutating requests (429 beyond)")
	f.IntVar(&o.MaxWatches, "max-watches", 10000, "maximum open watches (429 beyond; system:masters exempt)")
	f.IntVar(&o.MaxWatchesPerUser, "max-watches-per-user", 1000, "maximum open watches of one user (429 beyond; system:masters exempt)")
	f.DurationVar(&o.WatchWriteTimeout, "watch-write-timeout", 60*time.Second, "disconnect a watcher that has not taken a write for this long")
	f.DurationVar(&o.RequestTimeout, "request-timeout", 60*time.Second, "timeout of non-watch requests")
	f.DurationVar(&o.MinRequestTimeout, "min-request-timeout", 30*time.Minute, "watches end after a random time between this and twice this")
	f.BoolVar(&o.DisableWatchCache, "disable-watch-cache", false, "serve LIST and WATCH straight from etcd")
	f.DurationVar(&o.CompactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often etcd history is compacted (negative: never)")
	f.StringVar(&o.KubeconfigPath, "kubeconfig-out", "", "where to write the admin kubeconfig (default <data-dir>/kubeconfig)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}
