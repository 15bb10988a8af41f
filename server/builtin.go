package server

// Built-in resources: the core v1 kinds listwatch serves, leases and CRDs.
// Their selectable fields and table columns follow kube-apiserver's; their
// writes go through kube's own strategies (kinds.go).

const (
	groupCRD          = "apiextensions.k8s.io"
	groupCoordination = "coordination.k8s.io"
)

func builtinResources() []*resource {
	return []*resource{
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
			fields: map[string][]string{
				"spec.nodeName":            {"spec", "nodeName"},
				"spec.restartPolicy":       {"spec", "restartPolicy"},
				"spec.schedulerName":       {"spec", "schedulerName"},
				"spec.serviceAccountName":  {"spec", "serviceAccountName"},
				"spec.hostNetwork":         {"spec", "hostNetwork"},
				"status.phase":             {"status", "phase"},
				"status.podIP":             {"status", "podIP"},
				"status.nominatedNodeName": {"status", "nominatedNodeName"},
			},
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
			shortNames: []string{"svc"}, categories: []string{"all"},
			columns: []column{
				{name: "Type", path: []string{"spec", "type"}},
				{name: "Cluster-IP", path: []string{"spec", "clusterIP"}},
			},
		},
		{
			version: "v1", plural: "serviceaccounts", singular: "serviceaccount", kind: "ServiceAccount", namespaced: true,
			shortNames: []string{"sa"},
			columns:    []column{{name: "Secrets", typ: "integer", count: [][]string{{"secrets"}}}},
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
			columns: []column{{name: "Created At", path: []string{"metadata", "creationTimestamp"}, typ: "date"}},
		},
	}
}
