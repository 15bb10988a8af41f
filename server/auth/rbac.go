package auth

import (
	"context"
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/listwatch/listwatch/server/request"
)

// RBAC is kube's RBAC authorizer (k8s.io/kubernetes/plugin/pkg/auth/
// authorizer/rbac) over the server's own Roles, RoleBindings, ClusterRoles
// and ClusterRoleBindings, which it reads as kube-apiserver does: from
// client-go shared informers over a loopback client. Until Start's
// informers have synced it sees no object and so allows nothing.
//
// The same listers feed RuleResolver, kube's rule resolver that the
// escalation checks of writes to the four RBAC kinds and
// SelfSubjectRulesReviews use.
type RBAC struct {
	factory  informers.SharedInformerFactory
	authz    *rbac.RBACAuthorizer
	resolver *rbacregistryvalidation.DefaultRuleResolver
	synced   []cache.InformerSynced
	// indexers are the informers' indexers by resource, and writes wakes
	// AwaitWrite on their events (rbac_await.go).
	indexers map[string]cache.Indexer
	writes   *writes
}

// NewRBAC builds the authorizer over informers of client; it starts
// nothing.
func NewRBAC(client kubernetes.Interface) *RBAC {
	f := informers.NewSharedInformerFactory(client, 0)
	v1 := f.Rbac().V1()
	roles := &rbac.RoleGetter{Lister: v1.Roles().Lister()}
	roleBindings := &rbac.RoleBindingLister{Lister: v1.RoleBindings().Lister()}
	clusterRoles := &rbac.ClusterRoleGetter{Lister: v1.ClusterRoles().Lister()}
	clusterRoleBindings := &rbac.ClusterRoleBindingLister{Lister: v1.ClusterRoleBindings().Lister()}
	w := &writes{}
	indexers := map[string]cache.Indexer{}
	for resource, inf := range map[string]cache.SharedIndexInformer{
		"roles": v1.Roles().Informer(), "rolebindings": v1.RoleBindings().Informer(),
		"clusterroles": v1.ClusterRoles().Informer(), "clusterrolebindings": v1.ClusterRoleBindings().Informer(),
	} {
		// Only fails once the informer has stopped.
		_, _ = inf.AddEventHandler(w.handler())
		indexers[resource] = inf.GetIndexer()
	}
	return &RBAC{
		indexers: indexers,
		writes:   w,
		factory:  f,
		authz:    rbac.New(roles, roleBindings, clusterRoles, clusterRoleBindings),
		// kube's escalation checks read the registry, whose NotFound
		// names the resource in the plural.
		resolver: rbacregistryvalidation.NewDefaultRuleResolver(
			storageRoles{roles}, roleBindings, storageClusterRoles{clusterRoles}, clusterRoleBindings),
		synced: []cache.InformerSynced{
			v1.Roles().Informer().HasSynced, v1.RoleBindings().Informer().HasSynced,
			v1.ClusterRoles().Informer().HasSynced, v1.ClusterRoleBindings().Informer().HasSynced,
		},
	}
}

// Start runs the informers until ctx ends; Shutdown waits for them.
func (r *RBAC) Start(ctx context.Context) { r.factory.Start(ctx.Done()) }

// Shutdown waits for the informers Start started to stop (after its ctx
// ended).
func (r *RBAC) Shutdown() { r.factory.Shutdown() }

// WaitForSync blocks until the informers have listed every object once,
// or ctx ends (then it returns false).
func (r *RBAC) WaitForSync(ctx context.Context) bool {
	// The factory waits on the informers' done channels; cache's
	// WaitForCacheSync would poll them every 100 ms.
	return r.factory.WaitForCacheSyncWithContext(ctx).Err == nil && r.HasSynced()
}

// HasSynced reports whether the informers have listed every object once.
func (r *RBAC) HasSynced() bool {
	for _, s := range r.synced {
		if !s() {
			return false
		}
	}
	return true
}

// RuleResolver is kube's rule resolver over the same objects, for the
// escalation checks of writes to RBAC objects: a missing role is reported
// as kube's registry reports it there (naming the request's resource:
// rolebindings.rbac.authorization.k8s.io "x" not found), not as its
// informers do (role.rbac…).
func (r *RBAC) RuleResolver() rbacregistryvalidation.AuthorizationRuleResolver { return r.resolver }

// Authorize implements Authorizer with kube's RBAC authorizer.
func (r *RBAC) Authorize(ctx context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	return FromKube(r.authz).Authorize(ctx, u, info)
}

// RulesFor implements kube's authorizer.RuleResolver.
func (r *RBAC) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return r.authz.RulesFor(ctx, u, namespace)
}

// FromKube adapts one of kube's authorizers to ours.
func FromKube(a authorizer.Authorizer) Authorizer { return fromKube{a} }

type fromKube struct{ a authorizer.Authorizer }

func (f fromKube) Authorize(ctx context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	if info == nil {
		return DecisionNoOpinion, "", errors.New("auth: no request info")
	}
	d, reason, err := f.a.Authorize(ctx, Attributes(u, info))
	switch d {
	case authorizer.DecisionAllow:
		return DecisionAllow, reason, err
	case authorizer.DecisionDeny:
		return DecisionDeny, reason, err
	}
	return DecisionNoOpinion, reason, err
}

// RulesFor passes on to the kube authorizer when it resolves rules.
func (f fromKube) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if rr, ok := f.a.(authorizer.RuleResolver); ok {
		return rr.RulesFor(ctx, u, namespace)
	}
	return nil, nil, true, nil
}

// Attributes are kube's authorizer attributes of u doing info.
func Attributes(u *request.User, info *request.Info) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User:            UserToKube(u),
		Verb:            info.Verb,
		Namespace:       info.Namespace,
		APIGroup:        info.APIGroup,
		APIVersion:      info.APIVersion,
		Resource:        info.Resource,
		Subresource:     info.Subresource,
		Name:            info.Name,
		ResourceRequest: info.IsResourceRequest,
		Path:            info.Path,
	}
}

// storageRoles and storageClusterRoles report a missing role as kube's
// registry does: its NotFound names the resource of the request (from the
// request info in ctx; a RoleBinding's write names rolebindings), and the
// resource in the plural without one.
type storageRoles struct{ g *rbac.RoleGetter }

func (s storageRoles) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	r, err := s.g.GetRole(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(requestResource(ctx, "roles"), name)
	}
	return r, err
}

type storageClusterRoles struct{ g *rbac.ClusterRoleGetter }

func (s storageClusterRoles) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	r, err := s.g.GetClusterRole(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(requestResource(ctx, "clusterroles"), name)
	}
	return r, err
}

// requestResource is the resource of the request in ctx, as kube's
// registry qualifies its errors, or rbac's resource otherwise.
func requestResource(ctx context.Context, resource string) schema.GroupResource {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		return schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	}
	return rbacv1.Resource(resource)
}
