package server

// Built-in resources: the core v1 kinds listwatch serves, leases and CRDs.
// Their selectable fields and table columns follow kube-apiserver's; their
// writes go through kube's own strategies (kinds.go).

const (
	groupCRD          = "apiextensions.k8s.io"
	groupCoordination = "coordination.k8s.io"
	groupApps         = "apps"
	groupBatch        = "batch"
	groupRBAC         = "rbac.authorization.k8s.io"
	groupPolicy       = "policy"
	groupScheduling   = "scheduling.k8s.io"
	groupNetworking   = "networking.k8s.io"
	groupDiscovery    = "discovery.k8s.io"
	groupAdmission    = "admissionregistration.k8s.io"
)

// kubeResources are the built-ins whose Tables kube's printers make
// (their typing says printed): the workload, RBAC, policy, scheduling,
// networking and discovery kinds, and the rest of core v1. Storage keys
// are kube's, including its old names (minions, controllers, ingress,
// services/endpoints).
func kubeResources() []*resource {
	ns := func(group, plural, singular, kind string, status bool, short ...string) *resource {
		return &resource{group: group, version: "v1", plural: plural, singular: singular, kind: kind,
			namespaced: true, hasStatus: status, shortNames: short}
	}
	cluster := func(group, plural, singular, kind string, status bool, short ...string) *resource {
		r := ns(group, plural, singular, kind, status, short...)
		r.namespaced = false
		return r
	}
	all := func(r *resource) *resource {
		r.categories = []string{"all"}
		return r
	}
	ext := func(r *resource) *resource {
		r.categories = []string{"api-extensions"}
		return r
	}
	keyed := func(r *resource, name string) *resource {
		r.keyName = name
		return r
	}
	fields := func(r *resource, f map[string][]string) *resource {
		r.fields = f
		return r
	}
	absent := func(r *resource, a map[string]string) *resource {
		r.fieldAbsent = a
		return r
	}
	// scaled: the kind has kube's scale subresource, spec.replicas and
	// status.replicas with the selector at spec.selector (scale.go).
	scaled := func(r *resource) *resource {
		r.scale = &crScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", builtinSelector: true}
		return r
	}
	endpoints := keyed(ns("", "endpoints", "endpoints", "Endpoints", false, "ep"), "services/endpoints")
	endpoints.deprecated = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
	return []*resource{
		endpoints,
		ns("", "limitranges", "limitrange", "LimitRange", false, "limits"),
		absent(fields(keyed(cluster("", "nodes", "node", "Node", true, "no"), "minions"),
			map[string][]string{"spec.unschedulable": {"spec", "unschedulable"}}),
			map[string]string{"spec.unschedulable": "false"}),
		cluster("", "persistentvolumes", "persistentvolume", "PersistentVolume", true, "pv"),
		ns("", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", true, "pvc"),
		ns("", "podtemplates", "podtemplate", "PodTemplate", false),
		absent(fields(keyed(scaled(all(ns("", "replicationcontrollers", "replicationcontroller", "ReplicationController", true, "rc"))), "controllers"),
			map[string][]string{"status.replicas": {"status", "replicas"}}),
			map[string]string{"status.replicas": "0"}),
		ns("", "resourcequotas", "resourcequota", "ResourceQuota", true, "quota"),

		scaled(all(ns(groupApps, "deployments", "deployment", "Deployment", true, "deploy"))),
		scaled(all(ns(groupApps, "replicasets", "replicaset", "ReplicaSet", true, "rs"))),
		scaled(all(ns(groupApps, "statefulsets", "statefulset", "StatefulSet", true, "sts"))),
		all(ns(groupApps, "daemonsets", "daemonset", "DaemonSet", true, "ds")),
		ns(groupApps, "controllerrevisions", "controllerrevision", "ControllerRevision", false),

		absent(fields(all(ns(groupBatch, "jobs", "job", "Job", true)),
			map[string][]string{"status.successful": {"status", "succeeded"}}),
			map[string]string{"status.successful": "0"}),
		all(ns(groupBatch, "cronjobs", "cronjob", "CronJob", true, "cj")),

		ns(groupRBAC, "roles", "role", "Role", false),
		ns(groupRBAC, "rolebindings", "rolebinding", "RoleBinding", false),
		cluster(groupRBAC, "clusterroles", "clusterrole", "ClusterRole", false),
		cluster(groupRBAC, "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false),

		ns(groupPolicy, "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", true, "pdb"),
		cluster(groupScheduling, "priorityclasses", "priorityclass", "PriorityClass", false, "pc"),
		ns(groupNetworking, "networkpolicies", "networkpolicy", "NetworkPolicy", false, "netpol"),
		keyed(ns(groupNetworking, "ingresses", "ingress", "Ingress", true, "ing"), "ingress"),
		cluster(groupNetworking, "ingressclasses", "ingressclass", "IngressClass", false),
		ns(groupDiscovery, "endpointslices", "endpointslice", "EndpointSlice", false),

		// admissionregistration.k8s.io: kube keys them by plural alone.
		ext(cluster(groupAdmission, "validatingwebhookconfigurations", "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", false)),
		ext(cluster(groupAdmission, "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", false)),
		ext(cluster(groupAdmission, "validatingadmissionpolicies", "validatingadmissionpolicy", "ValidatingAdmissionPolicy", true)),
		ext(cluster(groupAdmission, "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", "ValidatingAdmissionPolicyBinding", false)),
		ext(cluster(groupAdmission, "mutatingadmissionpolicies", "mutatingadmissionpolicy", "MutatingAdmissionPolicy", false)),
		ext(cluster(groupAdmission, "mutatingadmissionpolicybindings", "mutatingadmissionpolicybinding", "MutatingAdmissionPolicyBinding", false)),
	}
}

func builtinResources() []*resource {
	return append([]*resource{
		{
			version: "v1", plural: "namespaces", hasStatus: true, singular: "namespace", kind: "Namespace",
			shortNames: []string{"ns"},
			fields:     map[string][]string{"status.phase": {"status", "phase"}},
			columns:    []column{{name: "Status", path: []string{"status", "phase"}}},
		},
		{
			version: "v1", plural: "configmaps", singular: "configmap", kind: "ConfigMap", namespaced: true,
			shortNames: []string{"cm"},
			columns:    []column{{name: "Data", typ: "integer", count: [][]string{{"data"}, {"binaryData"}}}},
		},
		{
			version: "v1", plural: "secrets", singular: "secret", kind: "Secret", namespaced: true,
			fields: map[string][]string{"type": {"type"}},
			columns: []column{
				{name: "Type", path: []string{"type"}},
				{name: "Data", typ: "integer", count: [][]string{{"data"}}},
			},
		},
		{
			version: "v1", plural: "pods", hasStatus: true, singular: "pod", kind: "Pod", namespaced: true,
			shortNames: []string{"po"}, categories: []string{"all"},
			subresources: []string{"ephemeralcontainers", "resize"}, // kinds_groups.go
			// bindings.go, eviction.go
			subCreate: map[string]func(*call) error{"binding": (*call).podBinding, "eviction": (*call).evict},
			fields: map[string][]string{
				"spec.nodeName":            {"spec", "nodeName"},
				"spec.restartPolicy":       {"spec", "restartPolicy"},
				"spec.schedulerName":       {"spec", "schedulerName"},
				"spec.serviceAccountName":  {"spec", "serviceAccountName"},
				"spec.hostNetwork":         {"spec", "hostNetwork"},
				"status.phase":             {"status", "phase"},
				"status.podIP":             {"status", "podIP"},
				"status.nominatedNodeName": {"status", "nominatedNodeName"},
				// kube accepts these two but has no attribute for the
				// first, and reads the second as spec.nodeName.
				"status.podIPs": nil,
				"spec.host":     {"spec", "nodeName"},
			},
			fieldAbsent: map[string]string{"spec.hostNetwork": "false"},
			columns: []column{
				{name: "Ready", cell: podReady},
				{name: "Status", cell: podStatus},
				{name: "Restarts", typ: "string", cell: podRestarts},
				{name: "IP", path: []string{"status", "podIP"}, priority: 1},
				{name: "Node", path: []string{"spec", "nodeName"}, priority: 1},
			},
		},
		{
			version: "v1", plural: "services", hasStatus: true, singular: "service", kind: "Service", namespaced: true,
			keyName:    "services/specs", // kube's key: endpoints are under services/endpoints
			shortNames: []string{"svc"}, categories: []string{"all"},
			fields: map[string][]string{
				"spec.clusterIP": {"spec", "clusterIP"},
				"spec.type":      {"spec", "type"},
			},
			columns: []column{
				{name: "Type", path: []string{"spec", "type"}},
				{name: "Cluster-IP", path: []string{"spec", "clusterIP"}},
			},
		},
		{
			version: "v1", plural: "serviceaccounts", singular: "serviceaccount", kind: "ServiceAccount", namespaced: true,
			// kube 1.37 prints a ServiceAccount's name and age only.
			shortNames: []string{"sa"},
		},
		{
			version: "v1", plural: "events", singular: "event", kind: "Event", namespaced: true,
			shortNames: []string{"ev"},
			fields: map[string][]string{
				"involvedObject.kind":            {"involvedObject", "kind"},
				"involvedObject.namespace":       {"involvedObject", "namespace"},
				"involvedObject.name":            {"involvedObject", "name"},
				"involvedObject.uid":             {"involvedObject", "uid"},
				"involvedObject.apiVersion":      {"involvedObject", "apiVersion"},
				"involvedObject.resourceVersion": {"involvedObject", "resourceVersion"},
				"involvedObject.fieldPath":       {"involvedObject", "fieldPath"},
				"reason":                         {"reason"},
				"reportingComponent":             {"reportingComponent"},
				"source":                         {"source", "component"},
				"type":                           {"type"},
			},
			columns: []column{
				{name: "Type", path: []string{"type"}},
				{name: "Reason", path: []string{"reason"}},
				{name: "Object", cell: eventObject},
				{name: "Message", path: []string{"message"}},
			},
		},
		{
			group: groupCoordination, version: "v1", plural: "leases", singular: "lease", kind: "Lease", namespaced: true,
			columns: []column{{name: "Holder", path: []string{"spec", "holderIdentity"}}},
		},
		{
			group: groupCRD, version: "v1", plural: "customresourcedefinitions", hasStatus: true, singular: "customresourcedefinition",
			kind: "CustomResourceDefinition", keyGroup: groupCRD,
			shortNames: []string{"crd", "crds"}, categories: []string{"api-extensions"},
		},
	}, append(kubeResources(), groupsResources()...)...)
}
