package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/internal/pki"
	"github.com/listwatch/listwatch/server"
	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/storage/direct"
	"github.com/listwatch/listwatch/storage/etcd"
)

// APIServer is a complete listwatch server.
type APIServer struct {
	opts Options

	ready chan struct{}

	// Set by Run before ready is closed; read-only after.
	url   string
	creds *pki.Credentials
	store *etcd.Store
}

// New validates opts. It starts nothing.
func New(opts Options) (*APIServer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &APIServer{opts: o, ready: make(chan struct{})}, nil
}

// Ready is closed once the server accepts requests.
func (a *APIServer) Ready() <-chan struct{} { return a.ready }

// URL is the server's https URL; valid after Ready.
func (a *APIServer) URL() string { return a.url }

// KubeconfigPath is where the admin kubeconfig is written.
func (a *APIServer) KubeconfigPath() string { return a.opts.KubeconfigPath }

// Credentials are the server's CA and admin credentials; valid after Ready.
func (a *APIServer) Credentials() *pki.Credentials { return a.creds }

// Store is the etcd store writes go through; valid after Ready.
func (a *APIServer) Store() *etcd.Store { return a.store }

// Run starts the server and blocks until ctx ends; it returns after every
// goroutine it started has exited and etcd has stopped. An error before
// Ready means the server could not start.
func (a *APIServer) Run(ctx context.Context) error {
	o := a.opts
	log := o.Logger
	// One server per data dir with embedded etcd: a second one fails
	// here, before it can rewrite the credentials the first one serves
	// with. Replicas on an external cluster may share a data dir (and so
	// their CA and admin credentials), as kube-apiservers share a CA.
	if len(o.EtcdServers) == 0 {
		unlock, err := etcd.LockDir(o.DataDir)
		if err != nil {
			return err
		}
		defer unlock()
	}
	creds, err := pki.EnsureCredentials(o.DataDir, o.Hosts)
	if err != nil {
		return err
	}
	a.creds = creds

	cli, closeEtcd, err := a.startEtcd(ctx)
	if err != nil {
		return err
	}
	defer closeEtcd()

	a.store = etcd.New(cli, etcd.WithRegisterer(o.Registerer))
	// The direct reader serves everything with --disable-watch-cache, and
	// otherwise what the caches cannot (yet); its Run (below) keeps the
	// bookmarks of its watches timely.
	directReader := direct.New(a.store)
	// The API's registry opens a cache per resource and closes it when
	// the resource changes or goes.
	var caches *cacheSet
	var readers server.Readers
	if !o.DisableWatchCache {
		caches = newCacheSet(a.store, directReader, o.Logger, o.Registerer)
		readers = caches
	}
	api, err := server.New(server.Config{
		Store:             a.store,
		Reader:            directReader,
		Readers:           readers,
		Logger:            log,
		Registerer:        o.Registerer,
		MinRequestTimeout: o.MinRequestTimeout,
		WatchWriteTimeout: o.WatchWriteTimeout,
		MaxBodyBytes:      o.MaxBodyBytes,
	})
	if err != nil {
		return err
	}
	handler, err := a.handler(api, creds)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("apiserver: listen: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	a.url = "https://" + net.JoinHostPort(clientHost(o.BindAddress), strconv.Itoa(port))
	if err := pki.WriteKubeconfig(o.KubeconfigPath, a.url, creds); err != nil {
		ln.Close()
		return err
	}

	// Request contexts derive from serveCtx, so that stopping the server
	// ends watches instead of waiting out their timeouts.
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	// No ReadTimeout or WriteTimeout: they would cut watches. Bodies get a
	// per-request read deadline instead (filters.BodyDeadline), and
	// watches a write deadline per write (server.Config.WatchWriteTimeout).
	httpSrv := &http.Server{
		Handler:           handler,
		TLSConfig:         pki.TLSConfig(creds),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return serveCtx },
		// TLS handshake failures and the like: debug, not stderr noise.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}

	var wg sync.WaitGroup
	errc := make(chan error, 5)
	run := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(serveCtx); err != nil && !errors.Is(err, context.Canceled) && serveCtx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	run("api", api.Run)
	run("direct reader", directReader.Run)
	if caches != nil {
		run("watch cache", caches.Run)
	}
	if o.CompactionInterval > 0 {
		c := &etcd.Compactor{Store: a.store, Interval: o.CompactionInterval, Logger: log}
		run("compactor", c.Run)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := httpSrv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("https: %w", err)
		}
	}()

	// Ready once the API has its default namespaces and CRDs, so that a
	// client told "ready" finds a complete server.
	select {
	case <-api.Ready():
		log.Info("listwatch serving", "url", a.url, "kubeconfig", o.KubeconfigPath, "dataDir", o.DataDir)
		close(a.ready)
		select {
		case <-ctx.Done():
		case err = <-errc:
		}
	case <-ctx.Done():
	case err = <-errc:
	}
	if err != nil {
		log.Error("listwatch stopping", "err", err)
	}
	stopServing()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = httpSrv.Shutdown(shutdownCtx)
	wg.Wait()
	return err
}

// startEtcd returns a client of the embedded member or of the external
// cluster, and how to close it.
func (a *APIServer) startEtcd(ctx context.Context) (*clientv3.Client, func(), error) {
	o := a.opts
	if len(o.EtcdServers) > 0 {
		cli, err := etcd.NewClient(etcd.Config{
			Endpoints: o.EtcdServers,
			CAFile:    o.EtcdCAFile,
			CertFile:  o.EtcdCertFile,
			KeyFile:   o.EtcdKeyFile,
		})
		if err != nil {
			return nil, nil, err
		}
		return cli, func() { cli.Close() }, nil
	}
	emb, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{Dir: o.DataDir + "/etcd"})
	if err != nil {
		return nil, nil, fmt.Errorf("apiserver: data dir %s: %w", o.DataDir, err)
	}
	return emb.Client(), func() { emb.Close() }, nil
}

// handler wraps the API in the security and limit filters, in the order
// the filters package documents, and adds /metrics behind them.
func (a *APIServer) handler(api *server.Server, creds *pki.Credentials) (http.Handler, error) {
	o := a.opts
	authn, err := a.authenticator(creds)
	if err != nil {
		return nil, err
	}
	authz, err := a.authorizer()
	if err != nil {
		return nil, err
	}
	metrics, err := filters.NewRequestMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", api.Handler())
	if g, ok := o.Registerer.(prometheus.Gatherer); ok {
		mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
	return filters.Chain(mux,
		filters.Recovery(o.Logger),
		request.WithRequestInfo,
		filters.BodyDeadline(o.RequestTimeout),
		filters.Authentication(authn, metrics),
		filters.Metrics(metrics, api.Serves),
		request.WithScope(api), // 404 for a cluster-scoped resource under a namespace, before authz judges it there
		filters.Authorization(authz),
		filters.MaxInFlight(filters.InFlightLimits{
			ReadOnly:       o.MaxRequestsInFlight,
			Mutating:       o.MaxMutatingRequestsInFlight,
			Watches:        o.MaxWatches,
			WatchesPerUser: o.MaxWatchesPerUser,
		}),
		filters.Timeout(o.RequestTimeout),
		filters.BodyLimit(o.MaxBodyBytes),
	), nil
}

// authenticator is the client certificate (verified here, not in the TLS
// handshake, so a bad one does not cut the connection), then the token
// files; a request without any credential is anonymous on the public-info
// paths only.
func (a *APIServer) authenticator(creds *pki.Credentials) (auth.Authenticator, error) {
	authns := auth.Union{auth.X509{Roots: pki.ClientCAPool(creds)}}
	for _, path := range []string{creds.Path(pki.TokenFile), a.opts.TokenAuthFile} {
		if path == "" {
			continue
		}
		tf, err := readTokenFile(path)
		if err != nil {
			return nil, err
		}
		authns = append(authns, tf)
	}
	return auth.AnonymousPublicInfo{Authenticator: authns}, nil
}

func readTokenFile(path string) (*auth.TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("apiserver: token file: %w", err)
	}
	defer f.Close()
	tf, err := auth.ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("apiserver: token file %s: %w", path, err)
	}
	return tf, nil
}

func (a *APIServer) authorizer() (auth.Authorizer, error) {
	if a.opts.AuthorizationPolicyFile == "" {
		return auth.NewAuthorizer(nil), nil
	}
	f, err := os.Open(a.opts.AuthorizationPolicyFile)
	if err != nil {
		return nil, fmt.Errorf("apiserver: policy file: %w", err)
	}
	defer f.Close()
	policy, err := auth.ParsePolicyFile(f)
	if err != nil {
		return nil, fmt.Errorf("apiserver: policy file %s: %w", a.opts.AuthorizationPolicyFile, err)
	}
	return auth.NewAuthorizer(policy), nil
}

// clientHost is the host clients should dial for a bind address.
func clientHost(bind string) string {
	if ip := net.ParseIP(bind); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			return "127.0.0.1"
		}
		return "::1"
	}
	return bind
}
