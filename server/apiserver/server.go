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
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	kubesa "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/internal/run"
	"github.com/listwatch/listwatch/server"
	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/internal/pki"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcd"
)

// APIServer is a complete listwatch server.
type APIServer struct {
	opts Options

	ready chan struct{}

	// Set by Run before ready is closed; read-only after.
	url         string
	creds       *pki.Credentials
	store       *etcd.Store
	controllers *controllers.Host

	// began is when Run began; the start phases are logged (at debug)
	// with the time since.
	began time.Time
}

// phase logs, at debug, that a start phase ended, with the time since Run
// began: `listwatch serve -v` (or a debug logger) shows where start time
// goes.
func (a *APIServer) phase(name string) {
	a.opts.Logger.Debug("start phase done", "phase", name, "sinceStart", time.Since(a.began))
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

// ControllersLeading reports whether this server runs the controllers now
// (it holds their lease); valid after Ready.
func (a *APIServer) ControllersLeading() bool { return a.controllers.IsLeader() }

// Store is the etcd store writes go through; valid after Ready.
func (a *APIServer) Store() *etcd.Store { return a.store }

// Run starts the server and blocks until ctx ends; it returns after every
// goroutine it started has exited and etcd has stopped. An error before
// Ready means the server could not start.
//
// It opens what outlives serving (the data-dir lock, the credentials,
// etcd), builds the server on them (build), and serves it (serve).
func (a *APIServer) Run(ctx context.Context) error {
	o := a.opts
	a.began = time.Now()
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
	a.phase("credentials")

	cli, closeEtcd, err := a.startEtcd(ctx)
	if err != nil {
		return err
	}
	defer closeEtcd()
	a.phase("etcd")

	p, err := build(o, creds, cli)
	if err != nil {
		return err
	}
	a.phase("build")
	a.store, a.url, a.controllers = p.store, p.url, p.controllers
	if err := a.serve(ctx, p); err != nil {
		o.Logger.Error("listwatch stopping", "err", err)
		return err
	}
	return nil
}

// parts is a server built and not serving: the listener is bound and the
// kubeconfig written, but no goroutine runs.
type parts struct {
	store     *etcd.Store
	api       *server.Server
	direct    *direct.Reader
	caches    *cacheSet       // nil with DisableWatchCache
	compactor *etcd.Compactor // nil without CompactionInterval
	http      *http.Server
	ln        net.Listener
	url       string
	// controllers run in the server, over loopback to it.
	controllers *controllers.Host
	loopback    *client.Client
	// rbac is the RBAC authorizer's informers and bootstrap policy.
	rbac *rbacParts
	// webhooks: the informers of admission webhook configurations, over
	// admissionHTTP (nil with both).
	webhooks      *server.Webhooks
	admissionHTTP *http.Client
	// services allocates Services' cluster IPs and node ports.
	services *serviceAllocation
	// controlPlane keeps kube-apiserver's own objects in kube-system.
	controlPlane *controlPlane
}

// build constructs the server on an etcd client and credentials; it
// starts nothing. On error nothing is left open.
func build(o Options, creds *pki.Credentials, cli *clientv3.Client) (_ *parts, err error) {
	p := &parts{store: etcd.New(cli, etcd.WithRegisterer(o.Registerer))}
	// Listening first: the RBAC authorizer's loopback client needs the URL.
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Port)))
	if err != nil {
		return nil, fmt.Errorf("apiserver: listen: %w", err)
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	p.url = "https://" + net.JoinHostPort(clientHost(o.BindAddress), strconv.Itoa(port))
	// The direct reader serves everything with --disable-watch-cache, and
	// otherwise what the caches cannot (yet); its Run keeps the bookmarks
	// of its watches timely.
	p.direct = direct.New(p.store)
	// The API's registry opens a cache per resource and closes it when
	// the resource changes or goes.
	var readers server.Readers
	if !o.DisableWatchCache {
		p.caches = newCacheSet(p.store, p.direct, o.Logger, o.Registerer)
		readers = p.caches
	}
	if o.CompactionInterval > 0 {
		p.compactor = &etcd.Compactor{Store: p.store, Interval: o.CompactionInterval, Logger: o.Logger}
	}
	sa, err := newServiceAccountTokens(o, p.store)
	if err != nil {
		return nil, err
	}
	if err := sa.oidc.install(o.ServiceAccountIssuers[0], o.ServiceAccountJWKSURI, strings.TrimPrefix(p.url, "https://"), sa.keys); err != nil {
		o.Logger.Info("service-account issuer discovery not served", "err", err)
	}
	authn, tokens, err := authenticator(o, creds, sa)
	if err != nil {
		return nil, err
	}
	if p.rbac, err = newRBAC(p.url, creds); err != nil {
		return nil, err
	}
	if p.controlPlane, err = newControlPlane(p.rbac.client, creds.CAPEM, strings.TrimPrefix(p.url, "https://")); err != nil {
		return nil, err
	}
	authz, err := authorizer(o, p.rbac.authz)
	if err != nil {
		return nil, err
	}
	if p.services, err = newServiceAllocation(o, p.rbac.client, p.store, port); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.services.ips.Destroy()
		}
	}()
	api, err := server.New(server.Config{
		Authorizer:         authz,
		RBACRuleResolver:   p.rbac.authz.RuleResolver(),
		TokenAuthenticator: tokens,
		APIAudiences:       o.APIAudiences,
		Store:              p.store,
		Reader:             p.direct,
		Readers:            readers,
		Logger:             o.Logger,
		Registerer:         o.Registerer,
		MinRequestTimeout:  o.MinRequestTimeout,
		WatchWriteTimeout:  o.WatchWriteTimeout,
		MaxBodyBytes:       o.MaxBodyBytes,

		DisableWatchListCompression: o.DisableResponseCompression,
		ServiceAccountTokens:        sa.serverConfig(o),
		ServiceAllocator:            p.services,
		AwaitWrite:                  p.rbac.awaitWrite(o),
	})
	if err != nil {
		return nil, err
	}
	p.api = api
	handler, err := handler(o, api, authn, authz, sa.oidc)
	if err != nil {
		return nil, err
	}
	// No ReadTimeout or WriteTimeout: they would cut watches. Bodies get a
	// per-request read deadline instead (filters.BodyDeadline), and a
	// watch's writes a watchdog (server.Config.WatchWriteTimeout).
	// serve sets BaseContext.
	p.http = &http.Server{
		Handler:           handler,
		TLSConfig:         pki.TLSConfig(creds),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		// TLS handshake failures and the like: debug, not stderr noise.
		ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}

	if err := pki.WriteKubeconfig(o.KubeconfigPath, p.url, creds); err != nil {
		return nil, err
	}
	p.ln = ln
	if err := p.buildControllers(o, creds); err != nil {
		return nil, err
	}
	if err := p.buildWebhooks(o, creds, authz); err != nil {
		ln.Close()
		return nil, err
	}
	return p, nil
}

// buildControllers makes the controller host, with a client of the
// server's own URL as its admin.
func (p *parts) buildControllers(o Options, creds *pki.Credentials) error {
	c, err := client.New(&client.Config{
		Host:     p.url,
		CAData:   creds.CAPEM,
		CertData: creds.AdminCertPEM,
		KeyData:  creds.AdminKeyPEM,
		QPS:      50, // kube's loopback client's
		Burst:    100,
		// kube-controller-manager's: the managedFields' manager.
		UserAgent: "kube-controller-manager/" + server.GitVersion + " (listwatch controllers)",
		Logger:    o.Logger,
	})
	if err != nil {
		return fmt.Errorf("apiserver: controllers client: %w", err)
	}
	p.loopback = c
	p.controllers, err = controllers.New(controllers.Config{
		Client:      c,
		RootCA:      creds.CAPEM,
		Controllers: o.Controllers,
		Registerer:  o.Registerer,
		Logger:      o.Logger,
	})
	return err
}

// serve runs the built parts on one run.Group until ctx ends or one of
// them fails, and returns after all have stopped. Ready is closed once the
// API has its default namespaces and CRDs, so that a client told "ready"
// finds a complete server.
func (a *APIServer) serve(ctx context.Context, p *parts) error {
	// Requests outlive the group's context until the controllers have
	// stopped, so that their last writes (the leader releasing its lease,
	// for the next replica to take over at once) are served.
	reqCtx, endRequests := context.WithCancel(context.Background())
	defer endRequests()
	controllersDone := make(chan struct{})
	var g run.Group
	g.Go("api", p.api.Run)
	g.Go("direct reader", p.direct.Run)
	if p.caches != nil {
		g.Go("watch cache", p.caches.Run)
	}
	if p.compactor != nil {
		g.Go("compactor", p.compactor.Run)
	}
	g.Go("https", func(ctx context.Context) error {
		// Request contexts end when serving stops, so that stopping the
		// server ends watches instead of waiting out their timeouts.
		p.http.BaseContext = func(net.Listener) context.Context { return reqCtx }
		if err := p.http.ServeTLS(p.ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go("https shutdown", func(ctx context.Context) error {
		<-ctx.Done()
		<-controllersDone
		endRequests()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = p.http.Shutdown(shutdownCtx)
		return nil
	})
	g.Go("controllers", func(ctx context.Context) error {
		defer close(controllersDone)
		defer p.loopback.CloseIdleConnections()
		// The controllers start once the server is ready, as
		// kube-controller-manager waits for kube-apiserver: their
		// writes would otherwise compete with the bootstrap policy's.
		select {
		case <-a.ready:
		case <-ctx.Done():
			return nil
		}
		// kube-apiserver's own loops start once it is ready too (its
		// post-start hooks), and its identity Lease is deleted before
		// requests stop.
		if err := p.controlPlane.start(ctx); err != nil {
			return err
		}
		defer p.controlPlane.stop()
		return p.controllers.Run(ctx)
	})
	g.Go("service allocation", func(ctx context.Context) error {
		select {
		case <-p.api.Ready():
		case <-ctx.Done():
			return nil
		}
		return p.services.run(ctx)
	})
	g.Go("rbac", func(ctx context.Context) error {
		select {
		case <-p.api.Ready():
		case <-ctx.Done():
			return nil
		}
		a.phase("api defaults")
		// The bootstrap policy's writes wait for the admission plugins,
		// which poll their informers every 100 ms: they start once the
		// informers have synced instead.
		if p.webhooks != nil {
			select {
			case <-p.webhooks.Synced():
			case <-ctx.Done():
				return nil
			}
		}
		return p.rbac.run(ctx, a.opts.Logger, a.phase)
	})
	// The admission informers start with the API, not once it is ready:
	// the loopback API serves from the start, and their lists then
	// overlap the API's own start (writes through the API wait for them).
	g.Go("admission webhooks", func(ctx context.Context) error {
		if p.webhooks == nil {
			return nil
		}
		defer p.admissionHTTP.CloseIdleConnections()
		go func() {
			select {
			case <-p.webhooks.Synced():
				a.phase("admission informers synced")
			case <-ctx.Done():
			}
		}()
		return p.webhooks.Run(ctx)
	})
	g.Go("ready", func(ctx context.Context) error {
		// Ready once the API has its defaults, the RBAC authorizer its
		// bootstrap policy (kube's readyz waits for the
		// rbac/bootstrap-roles hook) and writes see the webhook
		// configurations.
		select {
		case <-p.api.Ready():
		case <-ctx.Done():
			return nil
		}
		select {
		case <-p.rbac.ready:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-p.services.ready:
			a.phase("service allocation")
		case <-ctx.Done():
			return nil
		}
		synced := closedChan
		if p.webhooks != nil {
			synced = p.webhooks.Synced()
		}
		select {
		case <-synced:
			a.phase("ready")
			a.opts.Logger.Info("listwatch serving", "url", p.url, "kubeconfig", a.opts.KubeconfigPath, "dataDir", a.opts.DataDir)
			close(a.ready)
		case <-ctx.Done():
		}
		return nil
	})
	return g.Run(ctx)
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
// the filters package documents, and adds /metrics (and with Profiling
// /debug/pprof/) behind them.
func handler(o Options, api *server.Server, authn auth.Authenticator, authz auth.Authorizer, oidc *openIDHandler) (http.Handler, error) {
	metrics, err := filters.NewRequestMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	// Responses of the API over 128 KiB are gzipped, as kube's are; not
	// /metrics (which compresses itself) nor pprof's (gzip already). Inside
	// Timeout, so a 504 replaces a response the filter still holds.
	apiHandler := api.Handler()
	if !o.DisableResponseCompression {
		apiHandler = filters.Compression()(apiHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("/", apiHandler)
	// The service-account issuer's OIDC discovery (satoken.go).
	oidc.fallback = apiHandler
	mux.Handle(kubesa.OpenIDConfigPath, oidc)
	mux.Handle(kubesa.JWKSPath, oidc)
	if g, ok := o.Registerer.(prometheus.Gatherer); ok {
		mux.Handle("/metrics", promhttp.HandlerFor(serverGatherer{g}, promhttp.HandlerOpts{}))
	}
	if o.Profiling {
		handleProfiling(mux)
	}
	return filters.Chain(rawPaths{mux: mux, api: apiHandler},
		filters.Recovery(o.Logger),
		// kube-apiserver's own: every answer (a 401 too) carries an
		// Audit-Id (the request's, else a new UUID) and, unless the
		// handler sets one, Cache-Control "no-cache, private".
		genericfilters.WithAuditInit,
		genericfilters.WithCacheControl,
		request.WithRequestInfo,
		filters.BodyDeadline(o.RequestTimeout),
		filters.TimeoutParameter, // kube's 400 for a malformed timeout, before authentication
		filters.Authentication(authn, metrics),
		filters.Impersonation(authz),
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
// files, then service-account tokens; a request without any credential is
// anonymous on the public-info paths only. tokens is the token files
// alone, which TokenReviews use (with the service-account tokens, see
// server.ServiceAccountTokenConfig).
func authenticator(o Options, creds *pki.Credentials, sa *saTokens) (authn, tokens auth.Authenticator, err error) {
	var tfs auth.Union
	for _, path := range []string{creds.Path(pki.TokenFile), o.TokenAuthFile} {
		if path == "" {
			continue
		}
		tf, err := readTokenFile(path)
		if err != nil {
			return nil, nil, err
		}
		tfs = append(tfs, tf)
	}
	authns := append(auth.Union{auth.NewX509(pki.ClientCAPool(creds))}, tfs...)
	authns = append(authns, sa.authn)
	return auth.AnonymousPublicInfo{Authenticator: authns}, tfs, nil
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

// authorizer is the chain of --authorization-mode (auth.NewChain).
func authorizer(o Options, rbac *auth.RBAC) (auth.Authorizer, error) {
	cfg := auth.ChainConfig{Modes: o.AuthorizationModes, RBAC: rbac}
	if o.AuthorizationPolicyFile != "" {
		f, err := os.Open(o.AuthorizationPolicyFile)
		if err != nil {
			return nil, fmt.Errorf("apiserver: policy file: %w", err)
		}
		defer f.Close()
		policy, err := auth.ParsePolicyFile(f)
		if err != nil {
			return nil, fmt.Errorf("apiserver: policy file %s: %w", o.AuthorizationPolicyFile, err)
		}
		cfg.Policy = policy
	}
	chain, err := auth.NewChain(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	return chain, nil
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

// closedChan is a channel that is always ready.
var closedChan = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
