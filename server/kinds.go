package server

import (
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install" // registers coordination.k8s.io in legacyscheme
	_ "k8s.io/kubernetes/pkg/apis/core/install"         // registers core/v1 (types, defaults, conversions)
	"k8s.io/kubernetes/pkg/registry/coordination/lease"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	eventregistry "k8s.io/kubernetes/pkg/registry/core/event"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
)

// Typed built-in kinds: for each built-in resource served, the versioned
// and internal Go types kube-apiserver decodes it into, the scheme that
// defaults and converts them, and kube's own registry strategies, which
// decide what a write may change and validate it (see kinds_strategy.go).

// kindStrategy is what kube-apiserver's REST storage of one kind uses on
// writes: the strategy of the main resource and, when served, of /status.
type kindStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

// typedKind is one built-in resource's typing.
type typedKind struct {
	scheme   *runtime.Scheme
	external schema.GroupVersionKind // the served version
	internal schema.GroupVersionKind
	strategy kindStrategy
	status   rest.RESTUpdateStrategy // nil without a status subresource
	finalize rest.RESTUpdateStrategy // namespaces' /finalize; nil for the others
}

// crdScheme holds apiextensions.k8s.io, which kube-apiserver keeps out of
// its legacy scheme as well.
var crdScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	return s
}()

// typedKinds maps "group/plural" to its typing.
var typedKinds = func() map[string]*typedKind {
	core := func(kind string, st kindStrategy, status rest.RESTUpdateStrategy) *typedKind {
		return &typedKind{
			scheme:   legacyscheme.Scheme,
			external: schema.GroupVersionKind{Version: "v1", Kind: kind},
			internal: schema.GroupVersionKind{Version: runtime.APIVersionInternal, Kind: kind},
			strategy: st, status: status,
		}
	}
	crd := customresourcedefinition.NewStrategy(crdScheme)
	namespaces := core("Namespace", namespace.Strategy, namespace.StatusStrategy)
	namespaces.finalize = namespace.FinalizeStrategy
	return map[string]*typedKind{
		"/namespaces":      namespaces,
		"/configmaps":      core("ConfigMap", configmap.Strategy, nil),
		"/secrets":         core("Secret", secret.Strategy, nil),
		"/pods":            core("Pod", pod.Strategy, pod.StatusStrategy),
		"/services":        core("Service", service.Strategy, service.StatusStrategy),
		"/serviceaccounts": core("ServiceAccount", serviceaccount.Strategy, nil),
		"/events":          core("Event", eventregistry.Strategy, nil),
		groupCoordination + "/leases": {
			scheme:   legacyscheme.Scheme,
			external: schema.GroupVersionKind{Group: groupCoordination, Version: "v1", Kind: "Lease"},
			internal: schema.GroupVersionKind{Group: groupCoordination, Version: runtime.APIVersionInternal, Kind: "Lease"},
			strategy: lease.Strategy,
		},
		groupCRD + "/customresourcedefinitions": {
			scheme:   crdScheme,
			external: schema.GroupVersionKind{Group: groupCRD, Version: "v1", Kind: "CustomResourceDefinition"},
			internal: schema.GroupVersionKind{Group: groupCRD, Version: runtime.APIVersionInternal, Kind: "CustomResourceDefinition"},
			strategy: crd,
			status:   customresourcedefinition.NewStatusStrategy(crdScheme),
		},
	}
}()

// typed returns r's typing; nil for custom resources.
func (r *resource) typed() *typedKind {
	if r.crd != "" {
		return nil
	}
	return typedKinds[r.group+"/"+r.plural]
}
