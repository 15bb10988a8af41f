package server

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	clusterrolepolicy "k8s.io/kubernetes/pkg/registry/rbac/clusterrole/policybased"
	clusterrolebindingpolicy "k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding/policybased"
	rolepolicy "k8s.io/kubernetes/pkg/registry/rbac/role/policybased"
	rolebindingpolicy "k8s.io/kubernetes/pkg/registry/rbac/rolebinding/policybased"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
)

// Escalation prevention on writes of Roles, ClusterRoles, RoleBindings and
// ClusterRoleBindings, as kube-apiserver's policy-based REST storages of
// those kinds (k8s.io/kubernetes/pkg/registry/rbac/*/policybased) do it:
// this runs their own Create and Update in front of a storage that only
// hands the object back, so that their checks, and Forbidden messages,
// are kube's:
//
//   - members of system:masters may write anything;
//   - a (Cluster)Role may be written by a user allowed the "escalate" verb
//     on it, or holding every permission it grants (the rule resolver's
//     rules for the user in the object's namespace); an aggregationRule
//     needs cluster-admin's permissions, or "escalate";
//   - a (Cluster)RoleBinding may be written by a user allowed the "bind"
//     verb on the role it refers to, or holding every permission of that
//     role;
//   - an update that changes only what the garbage collector changes
//     (owner references, finalizers) is never refused.

// escalationStorage is one kind's policy-based storage.
type escalationStorage interface {
	Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error)
	Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error)
}

// rbacEscalation holds what the checks consult: the server's authorizer
// (for "escalate" and "bind") and the RBAC rule resolver.
type rbacEscalation struct {
	authz    authorizer.UnconditionalAuthorizer
	resolver rbacregistryvalidation.AuthorizationRuleResolver
}

// newRBACEscalation: a nil resolver sees no RBAC object at all, so only
// system:masters and whom the authorizer allows escalate or bind may
// write RBAC objects.
func newRBACEscalation(authz auth.Authorizer, resolver rbacregistryvalidation.AuthorizationRuleResolver) *rbacEscalation {
	if resolver == nil {
		resolver = rbacregistryvalidation.NewDefaultRuleResolver(noRBAC, noRBAC, noRBAC, noRBAC)
	}
	return &rbacEscalation{authz: auth.KubeAuthorizer{Authorizer: authz}, resolver: resolver}
}

var noRBAC = &rbacregistryvalidation.StaticRoles{}

const rbacGroup = "rbac.authorization.k8s.io"

// storage is the policy-based storage of res in front of next, nil when
// res is not one of the four RBAC kinds.
func (e *rbacEscalation) storage(res *resource, next rest.StandardStorage) escalationStorage {
	if res.group != rbacGroup {
		return nil
	}
	switch res.plural {
	case "roles":
		return rolepolicy.NewStorage(next, e.authz, e.resolver)
	case "clusterroles":
		return clusterrolepolicy.NewStorage(next, e.authz, e.resolver)
	case "rolebindings":
		return rolebindingpolicy.NewStorage(next, e.authz, e.resolver)
	case "clusterrolebindings":
		return clusterrolebindingpolicy.NewStorage(next, e.authz, e.resolver)
	}
	return nil
}

// checkEscalation refuses a write of an RBAC object (obj, internal type;
// old nil on create) that kube's policy-based storage would refuse; ctx
// is the strategy context (namespace, request info). It runs before the
// strategy, as kube's checks run before the store's BeforeCreate and
// BeforeUpdate.
func (c *call) checkEscalation(ctx context.Context, obj, old runtime.Object) error {
	if c.s.rbac == nil {
		return nil
	}
	st := c.s.rbac.storage(c.res, handBack{old: old})
	if st == nil {
		return nil
	}
	if u, ok := request.UserFrom(c.r.Context()); ok {
		ctx = genericapirequest.WithUser(ctx, auth.UserToKube(u))
	}
	var err error
	if old == nil {
		_, err = st.Create(ctx, obj, nil, &metav1.CreateOptions{})
	} else {
		_, _, err = st.Update(ctx, c.name, rest.DefaultUpdatedObjectInfo(obj), nil, nil, false, &metav1.UpdateOptions{})
	}
	if err != nil {
		return kubeStatus(err)
	}
	return nil
}

// handBack is the storage behind a policy-based one: Create hands the
// object back, Update the updated object computed from old (which runs
// the policy-based checks wrapped around it).
type handBack struct {
	rest.StandardStorage // never called
	old                  runtime.Object
}

func (h handBack) Create(_ context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	return obj, nil
}

func (h handBack) Update(ctx context.Context, _ string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, err := objInfo.UpdatedObject(ctx, h.old)
	return obj, false, err
}
