package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	kubeauthorizer "k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	kstorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/authentication/tokenreview"
	sastorage "k8s.io/kubernetes/pkg/registry/core/serviceaccount/storage"
	kubesa "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// The serviceaccounts/token subresource (TokenRequest): kube's own
// TokenREST (k8s.io/kubernetes/pkg/registry/core/serviceaccount/storage)
// over getters of this server's store, so its rules are kube's: default
// audiences (the API audiences), expirationSeconds (at least 600, shortened
// to the maximum with a warning, extended for pod-bound tokens of the API
// audiences), binding to a Pod, Secret or Node (wrong uid: 409; other kinds:
// 400; missing object: 404), and kube's claims signed by the issuer.

// ServiceAccountTokenConfig turns on the token subresource.
type ServiceAccountTokenConfig struct {
	// Issuer signs tokens (kube's serviceaccount.JWTTokenGenerator).
	Issuer kubesa.TokenGenerator
	// Authenticator validates them for TokenReviews (kube's
	// JWTTokenAuthenticator, auth.NewServiceAccountTokens).
	Authenticator authenticator.Token
	// MaxExpiration caps expirationSeconds (kube's
	// --service-account-max-token-expiration); 0: no cap.
	MaxExpiration time.Duration
	// ExtendExpiration and MaxExtendedExpiration: kube's
	// --service-account-extend-token-expiration (a pod-bound token asked
	// for 3607 s lives MaxExtendedExpiration, warning after 3607 s).
	ExtendExpiration      bool
	MaxExtendedExpiration time.Duration
}

// tokenRequestKind is the typing of TokenRequest bodies.
var tokenRequestKind = &typedKind{
	scheme:   legacyscheme.Scheme,
	external: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"),
	internal: schema.GroupVersionKind{Group: groupAuthentication, Version: runtime.APIVersionInternal, Kind: "TokenRequest"},
}

// tokenRequestResource is how a TokenRequest body is checked (its kind,
// apiVersion and namespace), as kube's handler decodes a subresource's
// body as its own kind.
var tokenRequestResource = &resource{group: groupAuthentication, version: "v1", plural: "serviceaccounts",
	kind: "TokenRequest", namespaced: true, virtual: true}

// installServiceAccountTokens builds kube's TokenREST over the store and
// makes TokenReviews validate service-account tokens.
func (s *Server) installServiceAccountTokens(cfg Config) error {
	sc := cfg.ServiceAccountTokens
	if sc == nil || sc.Issuer == nil {
		return nil
	}
	getters := storeGetters{store: s.store}
	authz := cfg.Authorizer
	if authz == nil {
		authz = auth.NewAuthorizer(nil)
	}
	sa, err := sastorage.NewREST(getters, sc.Issuer, authenticator.Audiences(cfg.APIAudiences),
		kubeauthorizer.AuthorizerFunc(auth.KubeAuthorizer{Authorizer: authz}.Authorize), sc.MaxExpiration,
		getters.of("pods"), getters.of("secrets"), getters.of("nodes"), nil, nil,
		sc.ExtendExpiration, sc.MaxExtendedExpiration)
	if err != nil {
		return fmt.Errorf("server: serviceaccounts/token: %w", err)
	}
	s.tokens = sa.Token
	if sc.Authenticator != nil {
		var tokens auth.Authenticator = auth.Union{}
		if cfg.TokenAuthenticator != nil {
			tokens = cfg.TokenAuthenticator
		}
		s.reviewers[groupAuthentication+"/tokenreviews"].rest = tokenreview.NewREST(auth.KubeTokenAuthenticator{
			Authenticator: tokens, APIAudiences: cfg.APIAudiences, ServiceAccounts: sc.Authenticator,
		}, cfg.APIAudiences)
	}
	return nil
}

// isTokenRequest: the request is to a service account's token
// subresource.
func isTokenRequest(res *resource, info *request.Info) bool {
	return info.Subresource == "token" && info.Name != "" && res.group == "" && res.plural == "serviceaccounts"
}

// tokenRequest answers POST on serviceaccounts/<name>/token: the
// TokenRequest with its status (token and expiration), 201 Created.
func (c *call) tokenRequest() error {
	if c.s.tokens == nil {
		return notFoundPath()
	}
	if err := c.checkWriteOptions("CreateOptions"); err != nil {
		return err
	}
	sa := c.res
	c.res = tokenRequestResource
	d, err := c.decodeBody()
	if err != nil {
		return err
	}
	obj, err := c.decodeTyped(tokenRequestKind, d)
	c.res = sa
	if err != nil {
		return err
	}
	if obj, err = c.manageToken(obj); err != nil {
		return err
	}
	ctx := c.strategyContext(true)
	if u, ok := request.UserFrom(c.r.Context()); ok {
		ctx = genericapirequest.WithUser(ctx, auth.UserToKube(u))
	}
	out, err := c.s.tokens.Create(ctx, c.name, obj, nil, &metav1.CreateOptions{})
	if err != nil {
		return kubeStatus(err)
	}
	external := &authenticationv1.TokenRequest{}
	if err := legacyscheme.Scheme.Convert(out, external, nil); err != nil {
		return wire.NewInternalError(err)
	}
	external.APIVersion, external.Kind = "authentication.k8s.io/v1", "TokenRequest"
	return c.writeExternal(http.StatusCreated, external.APIVersion, external.Kind, external)
}

// manageToken records the fields of the TokenRequest obj in its
// managedFields, as kube's create handler does with the token
// subresource's field manager before TokenREST answers it (so kube's
// answer lists them: the spec's fields set or defaulted, by the request's
// manager, subresource token).
func (c *call) manageToken(obj runtime.Object) (runtime.Object, error) {
	k := fieldManagerKey{tokenRequestKind, "token"}
	fm, ok := fieldManagers.Load(k)
	if !ok {
		made, err := typedFieldManager(tokenRequestKind, "token")
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		fm, _ = fieldManagers.LoadOrStore(k, made)
	}
	live, err := tokenRequestKind.scheme.New(tokenRequestKind.external)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	return fm.(*managedfields.FieldManager).UpdateNoErrors(live, obj, c.manager()), nil
}

// tokenDiscovery is the discovery entry of serviceaccounts/token, as kube
// lists it.
func tokenDiscovery() wire.APIResource {
	return wire.APIResource{
		Name: "serviceaccounts/token", Namespaced: true,
		Group: groupAuthentication, Version: "v1", Kind: "TokenRequest",
		Verbs: []string{"create"},
	}
}

// storeGetters reads service accounts, pods, secrets and nodes from the
// store as kube's internal types, for TokenREST: the service accounts
// through a generic registry Store whose storage is storeGetters (only Get
// is implemented), the others through rest.Getters.
type storeGetters struct {
	store storage.Interface
}

// storedKinds maps a resource to its storage key prefix and types.
var storedKinds = map[string]struct {
	prefix   string
	external func() runtime.Object
	internal func() runtime.Object
}{
	"serviceaccounts": {"/registry/serviceaccounts/", func() runtime.Object { return &corev1.ServiceAccount{} }, func() runtime.Object { return &api.ServiceAccount{} }},
	"pods":            {"/registry/pods/", func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &api.Pod{} }},
	"secrets":         {"/registry/secrets/", func() runtime.Object { return &corev1.Secret{} }, func() runtime.Object { return &api.Secret{} }},
	"nodes":           {"/registry/minions/", func() runtime.Object { return &corev1.Node{} }, func() runtime.Object { return &api.Node{} }},
}

// read decodes the stored object at key into the internal object into.
func (g storeGetters) read(ctx context.Context, resource, key string, into runtime.Object) error {
	kv, err := g.store.Get(ctx, key)
	if err != nil {
		return err
	}
	external := storedKinds[resource].external()
	if err := json.Unmarshal(kv.Value, external); err != nil {
		return err
	}
	return legacyscheme.Scheme.Convert(external, into, nil)
}

// of is the rest.Getter of resource, in the context's namespace.
func (g storeGetters) of(resource string) rest.Getter { return resourceGetter{g, resource} }

type resourceGetter struct {
	g        storeGetters
	resource string
}

func (r resourceGetter) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if name == "" {
		// The generic registry's key function: kube's answer to a Get
		// without a name.
		return nil, apierrors.NewBadRequest("Name parameter required.")
	}
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	if err := keyError(r.resource != "nodes", ns, name); err != nil {
		return nil, asKubeError(err)
	}
	kind := storedKinds[r.resource]
	key := kind.prefix + name
	if r.resource != "nodes" {
		key = kind.prefix + ns + "/" + name
	}
	out := kind.internal()
	err := r.g.read(ctx, r.resource, key, out)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: r.resource}, name)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}

// GetRESTOptions implements generic.RESTOptionsGetter for the service
// accounts' registry Store inside TokenREST: its storage is readOnlyStorage.
func (g storeGetters) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig:  &storagebackend.ConfigForResource{},
		ResourcePrefix: "serviceaccounts",
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error),
			func() runtime.Object, func() runtime.Object, kstorage.AttrFunc, kstorage.IndexerFuncs, *cache.Indexers,
		) (kstorage.Interface, factory.DestroyFunc, error) {
			return readOnlyStorage{g: g}, func() {}, nil
		},
	}, nil
}

// readOnlyStorage is a k8s.io/apiserver storage.Interface of which only
// Get is implemented (the others panic: TokenREST calls none).
type readOnlyStorage struct {
	kstorage.Interface
	g storeGetters
}

// Get reads the service account at key ("/serviceaccounts/<ns>/<name>").
func (s readOnlyStorage) Get(ctx context.Context, key string, _ kstorage.GetOptions, into runtime.Object) error {
	err := s.g.read(ctx, "serviceaccounts", "/registry"+key, into)
	if errors.Is(err, storage.ErrNotFound) {
		return kstorage.NewKeyNotFoundError(key, 0)
	}
	return err
}

// ReadinessCheck implements storage.Interface.
func (readOnlyStorage) ReadinessCheck() error { return nil }
