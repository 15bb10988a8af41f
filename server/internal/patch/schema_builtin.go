package patch

// Tables of the patch strategies of the built-in kinds this server serves.
// The facts are the patchStrategy and patchMergeKey struct tags of
// k8s.io/api v0.37 (and metav1.ObjectMeta); TestBuiltinSchemasMatchKubernetesTags
// checks every table against those tags by reflection. Fields without a tag
// are absent: they get the defaults (objects merge, lists are replaced).
// Notably tolerations, envFrom, ServiceAccount.imagePullSecrets and
// Namespace.spec.finalizers carry no tag, so they are replaced.

var objectMetaSchema = Fields{
	"ownerReferences": {Merge: true, MergeKey: "uid"},
	"finalizers":      {Merge: true},
}

// containerSchema serves Container and EphemeralContainer, which share these
// fields.
var containerSchema = Fields{
	"ports":         {Merge: true, MergeKey: "containerPort"},
	"env":           {Merge: true, MergeKey: "name"},
	"volumeMounts":  {Merge: true, MergeKey: "mountPath"},
	"volumeDevices": {Merge: true, MergeKey: "devicePath"},
}

var podSpecSchema = Fields{
	"volumes": {Merge: true, MergeKey: "name", RetainKeys: true, Schema: Fields{
		"ephemeral": {Schema: Fields{"volumeClaimTemplate": {Schema: Fields{"metadata": {Schema: objectMetaSchema}}}}},
	}},
	"initContainers":            {Merge: true, MergeKey: "name", Schema: containerSchema},
	"containers":                {Merge: true, MergeKey: "name", Schema: containerSchema},
	"ephemeralContainers":       {Merge: true, MergeKey: "name", Schema: containerSchema},
	"imagePullSecrets":          {Merge: true, MergeKey: "name"},
	"hostAliases":               {Merge: true, MergeKey: "ip"},
	"topologySpreadConstraints": {Merge: true, MergeKey: "topologyKey"},
	"schedulingGates":           {Merge: true, MergeKey: "name"},
	"resourceClaims":            {Merge: true, MergeKey: "name", RetainKeys: true},
	"evictionResponders":        {Merge: true, MergeKey: "name"},
}

var podStatusSchema = Fields{
	"conditions":            {Merge: true, MergeKey: "type"},
	"hostIPs":               {Merge: true, MergeKey: "ip"},
	"podIPs":                {Merge: true, MergeKey: "ip"},
	"resourceClaimStatuses": {Merge: true, MergeKey: "name", RetainKeys: true},
	"nodeAllocatableResourceClaimStatuses": {Merge: true, MergeKey: "resourceClaimName", Schema: Fields{
		"mapping":  {Merge: true, MergeKey: "name"},
		"overhead": {Merge: true, MergeKey: "name"},
	}},
}

// metadataOnly is the schema of kinds whose only strategic fields are in
// metadata.
var metadataOnly = Fields{"metadata": {Schema: objectMetaSchema}}

var builtinSchemas = map[string]Fields{
	"/Pod": {
		"metadata": {Schema: objectMetaSchema},
		"spec":     {Schema: podSpecSchema},
		"status":   {Schema: podStatusSchema},
	},
	"/Service": {
		"metadata": {Schema: objectMetaSchema},
		"spec":     {Schema: Fields{"ports": {Merge: true, MergeKey: "port"}}},
		"status":   {Schema: Fields{"conditions": {Merge: true, MergeKey: "type"}}},
	},
	"/ServiceAccount": {
		"metadata": {Schema: objectMetaSchema},
		"secrets":  {Merge: true, MergeKey: "name"},
	},
	"/Namespace": {
		"metadata": {Schema: objectMetaSchema},
		"status":   {Schema: Fields{"conditions": {Merge: true, MergeKey: "type"}}},
	},
	"/ConfigMap":                metadataOnly,
	"/Secret":                   metadataOnly,
	"/Event":                    metadataOnly,
	"coordination.k8s.io/Lease": metadataOnly,
	"apiextensions.k8s.io/CustomResourceDefinition": metadataOnly,
}

// SchemaFor returns the strategic merge patch schema of a built-in kind, by
// API group ("" for core) and kind. It returns false for every other kind:
// custom resources have no patch strategies, and Kubernetes answers 415
// Unsupported Media Type to a strategic merge patch for them.
func SchemaFor(group, kind string) (Schema, bool) {
	s, ok := builtinSchemas[group+"/"+kind]
	if !ok {
		return nil, false
	}
	return s, true
}
