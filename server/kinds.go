package server

import (
	"maps"

	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	crdtable "k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition/tableconvertor"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install" // registers admissionregistration.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/apps/install"                  // registers apps in legacyscheme
	_ "k8s.io/kubernetes/pkg/apis/batch/install"                 // registers batch
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"          // registers coordination.k8s.io in legacyscheme
	_ "k8s.io/kubernetes/pkg/apis/core/install"                  // registers core/v1 (types, defaults, conversions)
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"             // registers discovery.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/networking/install"            // registers networking.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/policy/install"                // registers policy
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"                  // registers rbac.authorization.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"            // registers scheduling.k8s.io
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/apps/controllerrevision"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/coordination/lease"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/endpoint"
	eventregistry "k8s.io/kubernetes/pkg/registry/core/event"
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/discovery/endpointslice"
	"k8s.io/kubernetes/pkg/registry/networking/ingress"
	"k8s.io/kubernetes/pkg/registry/networking/ingressclass"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
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
	// storage is the version objects are stored in when it is not the
	// served one (convert.go); zero for the others.
	storage  schema.GroupVersionKind
	internal schema.GroupVersionKind
	strategy kindStrategy
	status   rest.RESTUpdateStrategy // nil without a status subresource
	finalize rest.RESTUpdateStrategy // namespaces' /finalize; nil for the others
	// subs are the strategies of the other subresources that update the
	// object (certificatesigningrequests/approval…), by name.
	subs map[string]rest.RESTUpdateStrategy
	// printed: Tables come from kube's own printers (kubeprint.go), not
	// from the resource's hand-written columns.
	printed bool
	// defaultTable: kube's REST storage of the kind uses the default
	// table (Name, Created At) though a printer exists
	// (csistoragecapacities).
	defaultTable bool
	// table, when set, is the kind's own table convertor in kube's REST
	// storage, used instead of the printers (APIServices).
	table rest.TableConvertor
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
	// printed: Tables of t are kube's printer's (the core kinds whose
	// hand-made columns would differ from kube's).
	printed := func(t *typedKind) *typedKind {
		t.printed = true
		return t
	}
	// legacy is a kind of kube's legacy scheme in group, printed as
	// kube prints it.
	legacy := func(group, kind string, st kindStrategy, status rest.RESTUpdateStrategy) *typedKind {
		return &typedKind{
			scheme:   legacyscheme.Scheme,
			external: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind},
			internal: schema.GroupVersionKind{Group: group, Version: runtime.APIVersionInternal, Kind: kind},
			strategy: st, status: status, printed: true,
		}
	}
	crd := customresourcedefinition.NewStrategy(crdScheme)
	// The policies' strategies authorize paramKind/paramRef with the
	// request's server (policy_strategy.go); /status is kube's as is.
	vap, vapb, mapol, mapb := policyStrategies()
	namespaces := core("Namespace", namespace.Strategy, namespace.StatusStrategy)
	namespaces.finalize = namespace.FinalizeStrategy
	kinds := map[string]*typedKind{
		"/namespaces":             namespaces,
		"/configmaps":             core("ConfigMap", configmap.Strategy, nil),
		"/secrets":                core("Secret", secret.Strategy, nil),
		"/pods":                   printed(core("Pod", pod.Strategy, pod.StatusStrategy)),
		"/services":               printed(core("Service", service.Strategy, service.StatusStrategy)),
		"/serviceaccounts":        core("ServiceAccount", serviceaccount.Strategy, nil),
		"/events":                 printed(core("Event", eventregistry.Strategy, nil)),
		"/endpoints":              legacy("", "Endpoints", endpoint.Strategy, nil),
		"/limitranges":            legacy("", "LimitRange", limitrange.Strategy, nil),
		"/nodes":                  legacy("", "Node", node.Strategy, node.StatusStrategy),
		"/persistentvolumes":      legacy("", "PersistentVolume", persistentvolume.Strategy, persistentvolume.StatusStrategy),
		"/persistentvolumeclaims": legacy("", "PersistentVolumeClaim", persistentvolumeclaim.Strategy, persistentvolumeclaim.StatusStrategy),
		"/podtemplates":           legacy("", "PodTemplate", podtemplate.Strategy, nil),
		"/replicationcontrollers": legacy("", "ReplicationController", replicationcontroller.Strategy, replicationcontroller.StatusStrategy),
		"/resourcequotas":         legacy("", "ResourceQuota", resourcequota.Strategy, resourcequota.StatusStrategy),

		groupApps + "/deployments":         legacy(groupApps, "Deployment", deployment.Strategy, deployment.StatusStrategy),
		groupApps + "/replicasets":         legacy(groupApps, "ReplicaSet", replicaset.Strategy, replicaset.StatusStrategy),
		groupApps + "/statefulsets":        legacy(groupApps, "StatefulSet", statefulset.Strategy, statefulset.StatusStrategy),
		groupApps + "/daemonsets":          legacy(groupApps, "DaemonSet", daemonset.Strategy, daemonset.StatusStrategy),
		groupApps + "/controllerrevisions": legacy(groupApps, "ControllerRevision", controllerrevision.Strategy, nil),

		groupBatch + "/jobs":     legacy(groupBatch, "Job", job.Strategy, job.StatusStrategy),
		groupBatch + "/cronjobs": legacy(groupBatch, "CronJob", cronjob.Strategy, cronjob.StatusStrategy),

		groupRBAC + "/roles":               legacy(groupRBAC, "Role", role.Strategy, nil),
		groupRBAC + "/rolebindings":        legacy(groupRBAC, "RoleBinding", rolebinding.Strategy, nil),
		groupRBAC + "/clusterroles":        legacy(groupRBAC, "ClusterRole", clusterrole.Strategy, nil),
		groupRBAC + "/clusterrolebindings": legacy(groupRBAC, "ClusterRoleBinding", clusterrolebinding.Strategy, nil),

		groupPolicy + "/poddisruptionbudgets": legacy(groupPolicy, "PodDisruptionBudget", poddisruptionbudget.Strategy, poddisruptionbudget.StatusStrategy),
		groupScheduling + "/priorityclasses":  legacy(groupScheduling, "PriorityClass", priorityclass.Strategy, nil),
		groupNetworking + "/networkpolicies":  legacy(groupNetworking, "NetworkPolicy", networkpolicy.Strategy, nil),
		groupNetworking + "/ingresses":        legacy(groupNetworking, "Ingress", ingress.Strategy, ingress.StatusStrategy),
		groupNetworking + "/ingressclasses":   legacy(groupNetworking, "IngressClass", ingressclass.Strategy, nil),
		groupDiscovery + "/endpointslices":    legacy(groupDiscovery, "EndpointSlice", endpointslice.Strategy, nil),

		groupAdmission + "/validatingwebhookconfigurations":   legacy(groupAdmission, "ValidatingWebhookConfiguration", validatingwebhookconfiguration.Strategy, nil),
		groupAdmission + "/mutatingwebhookconfigurations":     legacy(groupAdmission, "MutatingWebhookConfiguration", mutatingwebhookconfiguration.Strategy, nil),
		groupAdmission + "/validatingadmissionpolicies":       legacy(groupAdmission, "ValidatingAdmissionPolicy", vap, validatingadmissionpolicy.NewStatusStrategy(validatingadmissionpolicy.NewStrategy(nil, nil))),
		groupAdmission + "/validatingadmissionpolicybindings": legacy(groupAdmission, "ValidatingAdmissionPolicyBinding", vapb, nil),
		groupAdmission + "/mutatingadmissionpolicies":         legacy(groupAdmission, "MutatingAdmissionPolicy", mapol, nil),
		groupAdmission + "/mutatingadmissionpolicybindings":   legacy(groupAdmission, "MutatingAdmissionPolicyBinding", mapb, nil),

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
			// kube's CRD storage has its own Table: Name, Scope, Versions,
			// Created At, then Group, Kind, ShortNames, Established.
			printed: true, table: crdtable.New(),
		},
	}
	maps.Copy(kinds, groupsTypedKinds()) // kinds_groups.go
	kinds["/pods"].subs = podSubStrategies()
	return kinds
}()

// typed returns r's typing; nil for custom resources.
func (r *resource) typed() *typedKind {
	if r.crd != "" {
		return nil
	}
	if t, ok := typedKinds[r.group+"/"+r.version+"/"+r.plural]; ok {
		return t // a version stored as another (convert.go)
	}
	return typedKinds[r.group+"/"+r.plural]
}
