package server

import (
	"context"
	"errors"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"
	sastorage "k8s.io/kubernetes/pkg/registry/core/serviceaccount/storage"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"

	"github.com/listwatch/listwatch/internal/run"
	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/trace"
	"github.com/listwatch/listwatch/wire"
)

// ErrNoStore: Config.Store is nil.
var ErrNoStore = errors.New("server: Config.Store is required")

// ErrNoReader: neither Config.Reader nor Config.Readers is set.
var ErrNoReader = errors.New("server: Config.Reader or Config.Readers is required")

// Config configures a Server. Store, and Reader or Readers, are required:
// the assembly (package apiserver) chooses the readers and runs them.
type Config struct {
	// Store serves writes and single-object reads.
	Store storage.Interface
	// Reader serves LIST and WATCH of every resource when Readers is nil
	// (for example a storage/direct Reader over Store, with the watch
	// cache disabled). Whoever made it runs it.
	Reader storage.ListWatcher
	// Readers, if set, opens a reader per resource (the watch caches);
	// the server's registry opens and closes them as resources come, change
	// and go. Whoever made it runs it.
	Readers Readers
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer, if set, receives the server's metrics.
	Registerer prometheus.Registerer
	// MinRequestTimeout bounds watches without timeoutSeconds: each ends
	// after a random time in [MinRequestTimeout, 2*MinRequestTimeout).
	// Default 30 minutes.
	MinRequestTimeout time.Duration
	// WatchWriteTimeout bounds each write (and flush) of a watch event:
	// a watcher that does not read for this long is disconnected.
	// Default DefaultWatchWriteTimeout.
	WatchWriteTimeout time.Duration
	// SlowThreshold is the duration past which a request's trace is
	// logged. Default trace.DefaultThreshold.
	SlowThreshold time.Duration
	// DisableWatchListCompression: never gzip watch-list streams (see
	// watchgzip.go). kube-apiserver 1.37 compresses them (its
	// WatchListCompression feature, beta and on by default).
	DisableWatchListCompression bool
	// MaxBodyBytes caps request bodies; default 3 MiB, as kube.
	MaxBodyBytes int64
	// Now is the clock for creationTimestamp and table ages; default
	// time.Now.
	Now func() time.Time
	// Authorizer answers SubjectAccessReviews, LocalSubjectAccessReviews,
	// SelfSubjectAccessReviews and SelfSubjectRulesReviews; it should be
	// the one the filter chain authorizes with. Default
	// auth.NewAuthorizer(nil).
	Authorizer auth.Authorizer
	// TokenAuthenticator authenticates the bearer tokens of TokenReviews
	// (it sees a request with only an Authorization header). Nil: every
	// TokenReview is answered unauthenticated.
	TokenAuthenticator auth.Authenticator
	// APIAudiences are the audiences of tokens issued for this server,
	// which TokenReview checks as kube's does.
	APIAudiences []string
	// ServiceAccountTokens, if set, serves serviceaccounts/token and
	// makes TokenReviews validate service-account tokens (satoken.go).
	ServiceAccountTokens *ServiceAccountTokenConfig
	// RBACRuleResolver resolves users' RBAC rules for the escalation
	// checks of writes to RBAC objects (rbac_escalation.go). Nil: no RBAC
	// object grants anything there.
	RBACRuleResolver rbacregistryvalidation.AuthorizationRuleResolver
	// KubeletClient is how pods/log, exec, attach, portforward and
	// nodes/proxy reach kubelets (podsub.go); nil: kube-apiserver's
	// defaults (port 10250; no CA: kube's kubelet client does not verify
	// kubelet certificates).
	KubeletClient *kubeletclient.KubeletClientConfig
	// ServiceAllocator allocates Services' cluster IPs and node ports
	// (servicealloc.go). Nil: none are allocated.
	ServiceAllocator ServiceAllocator
	// AwaitWrite, if set, is called by a write of one object (create,
	// update, patch, apply, delete) once storage committed it and before
	// its answer is written, so that a part of the server that follows
	// storage (an informer) may catch up with it first: what the answer
	// says is done is then in effect there. It returns when it is, or
	// when it gives up; the write stands either way. Not called for a
	// dry run, a write that failed or wrote nothing, or deletecollection
	// (awaitwrite.go).
	AwaitWrite func(ctx context.Context, w CommittedWrite)

	// generateName, set by tests, replaces generateName (admit.go).
	generateName func(base string) string
}

// Server is the API: routing, discovery, and the verbs over storage.
type Server struct {
	store   storage.Interface
	log     *slog.Logger
	minReq  time.Duration
	slow    time.Duration
	maxBody int64
	now     func() time.Time
	// genName names an object from its generateName (generateName,
	// unless a test set Config.generateName).
	genName func(base string) string
	reg     *registry
	metrics *metrics
	// nsDeleted: namespaces whose deletion began here lately, which
	// checkNamespaceOpen reads from storage (create.go).
	nsDeleted liveLookups
	// reviewers answer the identity APIs, by "group/plural" (identity.go).
	reviewers map[string]*reviewer
	// tokens serves serviceaccounts/token; nil when not configured.
	tokens *sastorage.TokenREST
	// authz is Config.Authorizer, for kube's strategies that authorize
	// (kinds_groups.go) and for an apply that creates, which must also be
	// allowed to create (ssa.go). Nil: no such checks.
	authz auth.Authorizer
	// aggDiscovery answers /api and /apis in the aggregated form.
	aggDiscovery *aggregatedDiscovery
	// rbac checks writes of RBAC objects for escalation.
	rbac *rbacEscalation
	// webhooks, if set (EnableWebhooks), are the admission webhooks
	// writes go through (webhook.go).
	webhooks *Webhooks
	// convFactory makes the converters of CRDs with conversion webhooks,
	// once (crconvert.go).
	convOnce    sync.Once
	convFactory *conversion.CRConverterFactory
	convErr     error
	// convs are the converters of CRDs with conversion webhooks, by CRD
	// name, kept while what they depend on is unchanged (crd.go).
	convMu sync.Mutex
	convs  map[string]convDef
	// crdFin runs the finalizers of CRDs being deleted (crdfinalizer.go).
	crdFin crdFinalizers
	// connect serves the streaming and proxy subresources (podsub.go).
	connect *connectors
	// openapi serves /openapi/v2 and /openapi/v3 (openapi.go).
	openapi *openAPIDocs
	// services allocates Services' cluster IPs and node ports; nil: none.
	services ServiceAllocator
	// awaitWrite is Config.AwaitWrite; nil: writes answer at once.
	awaitWrite func(ctx context.Context, w CommittedWrite)

	// bootOnce closes booted when Run has made the default namespaces
	// and loaded the CRDs; /readyz fails until then.
	bootOnce sync.Once
	booted   chan struct{}
	// stopping is closed when Run's context ends: /readyz's shutdown
	// check fails from then on.
	stopOnce sync.Once
	stopping chan struct{}
	// health serves /healthz, /livez and /readyz (nonresource.go).
	health healthPaths
	// apiServices keeps the automanaged APIServices (apiservices.go).
	apiServices *apiServices

	// watchWrite bounds each write of a watch event.
	watchWrite time.Duration
	// watchListGzip: gzip watch-list streams for clients that accept it.
	watchListGzip bool
}

// New validates cfg and returns a Server. It starts nothing.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, ErrNoStore
	}
	if cfg.Reader == nil && cfg.Readers == nil {
		return nil, ErrNoReader
	}
	s := &Server{
		store:    cfg.Store,
		log:      cfg.Logger,
		minReq:   cfg.MinRequestTimeout,
		slow:     cfg.SlowThreshold,
		maxBody:  cfg.MaxBodyBytes,
		now:      cfg.Now,
		genName:  cfg.generateName,
		booted:   make(chan struct{}),
		stopping: make(chan struct{}),

		services:   cfg.ServiceAllocator,
		awaitWrite: cfg.AwaitWrite,

		watchListGzip: !cfg.DisableWatchListCompression,
	}
	readers := cfg.Readers
	if readers == nil {
		readers = sharedReaders{cfg.Reader}
	}
	s.reg = newRegistry(readers)
	s.reviewers = newReviewers(cfg.Authorizer, cfg.TokenAuthenticator, cfg.APIAudiences)
	if err := s.installServiceAccountTokens(cfg); err != nil {
		return nil, err
	}
	if err := s.installConnectors(cfg); err != nil {
		return nil, err
	}
	s.rbac = newRBACEscalation(cfg.Authorizer, cfg.RBACRuleResolver)
	s.authz = cfg.Authorizer
	s.aggDiscovery = newAggregatedDiscovery(s)
	s.openapi = newOpenAPIDocs(s.reg, s.openAPISubresources())
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.minReq <= 0 {
		s.minReq = 30 * time.Minute
	}
	if s.watchWrite = cfg.WatchWriteTimeout; s.watchWrite <= 0 {
		s.watchWrite = DefaultWatchWriteTimeout
	}
	if s.slow <= 0 {
		s.slow = trace.DefaultThreshold
	}
	if s.maxBody <= 0 {
		s.maxBody = wire.MaxRequestBodyBytes
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.genName == nil {
		s.genName = generateName
	}
	m, err := newMetrics(cfg.Registerer, s.reg)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.health = s.newHealthPaths()
	return s, nil
}

// Run creates the default namespaces if absent, then follows the CRDs in
// storage (its own and other servers') so their resources are served,
// until ctx ends. It returns after its work has stopped. It does not run
// the readers: whoever made them does. Run is called once: from the end
// of ctx on, /readyz fails its shutdown check for good.
func (s *Server) Run(ctx context.Context) error {
	var g run.Group
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	stopping := func() { s.stopOnce.Do(func() { close(s.stopping) }) }
	defer stopping()                         // surely by the time Run returns
	defer context.AfterFunc(ctx, stopping)() // and as soon as ctx ends
	g.Go("crds", func(ctx context.Context) error {
		if err := s.bootstrapObjects(ctx); err != nil { // flowcontrol.go
			return err
		}
		if err := s.startAPIServices(ctx, &g); err != nil { // apiservices.go
			return err
		}
		s.crdFin.start(ctx)
		defer s.crdFin.wait()
		err := s.followCRDs(ctx, func() { s.bootOnce.Do(func() { close(s.booted) }) })
		if err == nil {
			cancel() // the API's work has ended: so does Run
		}
		return err
	})
	return g.Run(stop)
}

// Ready is closed once Run has created the default namespaces and loaded
// the CRDs: from then on the server answers like a fresh kube-apiserver.
func (s *Server) Ready() <-chan struct{} { return s.booted }

// Handler returns the API without authentication, authorization or limits;
// those are filters wrapped around it.
//
// A panic in it is recovered (filters.Recovery): it becomes a 500
// Status if nothing was written yet, else the connection is aborted.
func (s *Server) Handler() http.Handler {
	return filters.Recovery(s.log)(prettyJSON(http.HandlerFunc(s.serveHTTP)))
}

// Serves reports whether the server now serves resource in group and
// version: a built-in, or a resource of an established CRD.
func (s *Server) Serves(group, version, resource string) bool {
	_, ok := s.reg.lookup(group, version, resource)
	return ok
}
