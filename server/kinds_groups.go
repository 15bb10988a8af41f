package server

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	aggregatorinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/registry/apiservice"
	apiserviceetcd "k8s.io/kube-aggregator/pkg/registry/apiservice/etcd"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"      // registers autoscaling
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"     // registers certificates.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/events/install"           // registers events.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"      // registers flowcontrol.apiserver.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/node/install"             // registers node.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/resource/install"         // registers resource.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/storage/install"          // registers storage.k8s.io
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install" // registers storagemigration.k8s.io
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	"k8s.io/kubernetes/pkg/registry/certificates/certificates"
	"k8s.io/kubernetes/pkg/registry/certificates/clustertrustbundle"
	"k8s.io/kubernetes/pkg/registry/certificates/podcertificaterequest"
	eventregistry "k8s.io/kubernetes/pkg/registry/core/event"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/flowschema"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/prioritylevelconfiguration"
	"k8s.io/kubernetes/pkg/registry/networking/ipaddress"
	"k8s.io/kubernetes/pkg/registry/networking/servicecidr"
	"k8s.io/kubernetes/pkg/registry/node/runtimeclass"
	"k8s.io/kubernetes/pkg/registry/resource/deviceclass"
	"k8s.io/kubernetes/pkg/registry/resource/devicetaintrule"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaim"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaimtemplate"
	"k8s.io/kubernetes/pkg/registry/resource/resourceslice"
	"k8s.io/kubernetes/pkg/registry/storage/csidriver"
	"k8s.io/kubernetes/pkg/registry/storage/csinode"
	"k8s.io/kubernetes/pkg/registry/storage/csistoragecapacity"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattachment"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattributesclass"
	"k8s.io/kubernetes/pkg/registry/storagemigration/storagemigration"
	"k8s.io/utils/clock"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// The rest of kube-apiserver v1.37's built-in groups: autoscaling,
// certificates, flow control, node, resource (DRA), storage, storage
// migration, the newer networking kinds and the aggregator's APIServices.
// Each is stored at kube's key (the plural under /registry, APIServices
// under apiregistration.k8s.io), written through kube's own registry
// strategies and printed by kube's printers, as the rows of kinds.go.

const (
	groupAutoscaling      = "autoscaling"
	groupCertificates     = "certificates.k8s.io"
	groupFlowcontrol      = "flowcontrol.apiserver.k8s.io"
	groupNode             = "node.k8s.io"
	groupResourceDRA      = "resource.k8s.io"
	groupStorage          = "storage.k8s.io"
	groupStorageMigration = "storagemigration.k8s.io"
	groupAPIRegistration  = "apiregistration.k8s.io"
	groupEvents           = "events.k8s.io"
)

// aggregatorScheme holds apiregistration.k8s.io, which kube-apiserver
// serves from its aggregator with a scheme of its own.
var aggregatorScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	aggregatorinstall.Install(s)
	return s
}()

// groupsTypedKinds are the typings of the kinds this file adds, merged
// into typedKinds.
func groupsTypedKinds() map[string]*typedKind {
	kind := func(group, version, kind string, st kindStrategy, status rest.RESTUpdateStrategy) *typedKind {
		return &typedKind{
			scheme:   legacyscheme.Scheme,
			external: schema.GroupVersionKind{Group: group, Version: version, Kind: kind},
			internal: schema.GroupVersionKind{Group: group, Version: runtime.APIVersionInternal, Kind: kind},
			strategy: st, status: status, printed: true,
		}
	}
	csrs := kind(groupCertificates, "v1", "CertificateSigningRequest", certificates.Strategy, certificates.StatusStrategy)
	csrs.subs = map[string]rest.RESTUpdateStrategy{"approval": certificates.ApprovalStrategy}
	pcr := podcertificaterequest.NewStrategy()
	claims := resourceclaim.NewStrategy(ctxNamespaces{}, ctxAuthorizer{})
	capacities := kind(groupStorage, "v1", "CSIStorageCapacity", csistoragecapacity.Strategy, nil)
	capacities.defaultTable = true
	componentStatuses := kind("", "v1", "ComponentStatus", nil, nil) // read-only (bindings.go)
	apiservices := kind(groupAPIRegistration, "v1", "APIService",
		apiservice.NewStrategy(aggregatorScheme), apiservice.NewStatusStrategy(aggregatorScheme))
	apiservices.scheme = aggregatorScheme
	apiservices.table = &apiserviceetcd.REST{} // the aggregator's own table; its ConvertToTable reads no field
	// Served as one version, stored as another (convert.go); typedKinds
	// keys them with their version.
	hpaV1 := kind(groupAutoscaling, "v1", "HorizontalPodAutoscaler", horizontalpodautoscaler.Strategy, horizontalpodautoscaler.StatusStrategy)
	hpaV1.storage = schema.GroupVersionKind{Group: groupAutoscaling, Version: "v2", Kind: "HorizontalPodAutoscaler"}
	events := kind(groupEvents, "v1", "Event", eventregistry.Strategy, nil)
	events.internal = schema.GroupVersionKind{Version: runtime.APIVersionInternal, Kind: "Event"}
	events.storage = schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	return map[string]*typedKind{
		groupAutoscaling + "/horizontalpodautoscalers": kind(groupAutoscaling, "v2", "HorizontalPodAutoscaler",
			horizontalpodautoscaler.Strategy, horizontalpodautoscaler.StatusStrategy),
		groupAutoscaling + "/v1/horizontalpodautoscalers": hpaV1,
		groupEvents + "/v1/events":                        events,

		groupCertificates + "/certificatesigningrequests": csrs,
		groupCertificates + "/clustertrustbundles":        kind(groupCertificates, "v1", "ClusterTrustBundle", clustertrustbundle.Strategy, nil),
		groupCertificates + "/podcertificaterequests": kind(groupCertificates, "v1", "PodCertificateRequest", pcr,
			podcertificaterequest.NewStatusStrategy(pcr, ctxAuthorizer{}, clock.RealClock{})),

		groupFlowcontrol + "/flowschemas": kind(groupFlowcontrol, "v1", "FlowSchema", flowschema.Strategy, flowschema.StatusStrategy),
		groupFlowcontrol + "/prioritylevelconfigurations": kind(groupFlowcontrol, "v1", "PriorityLevelConfiguration",
			prioritylevelconfiguration.Strategy, prioritylevelconfiguration.StatusStrategy),

		groupNode + "/runtimeclasses": kind(groupNode, "v1", "RuntimeClass", runtimeclass.Strategy, nil),

		groupResourceDRA + "/deviceclasses":    kind(groupResourceDRA, "v1", "DeviceClass", deviceclass.Strategy, nil),
		groupResourceDRA + "/devicetaintrules": kind(groupResourceDRA, "v1", "DeviceTaintRule", devicetaintrule.Strategy, devicetaintrule.StatusStrategy),
		groupResourceDRA + "/resourceclaims": kind(groupResourceDRA, "v1", "ResourceClaim", claims,
			resourceclaim.NewStatusStrategy(claims)),
		groupResourceDRA + "/resourceclaimtemplates": kind(groupResourceDRA, "v1", "ResourceClaimTemplate",
			resourceclaimtemplate.NewStrategy(ctxNamespaces{}), nil),
		groupResourceDRA + "/resourceslices": kind(groupResourceDRA, "v1", "ResourceSlice", resourceslice.Strategy, nil),

		groupStorage + "/csidrivers":              kind(groupStorage, "v1", "CSIDriver", csidriver.Strategy, nil),
		groupStorage + "/csinodes":                kind(groupStorage, "v1", "CSINode", csinode.Strategy, csinode.StatusStrategy),
		groupStorage + "/csistoragecapacities":    capacities,
		"/componentstatuses":                      componentStatuses,
		groupStorage + "/storageclasses":          kind(groupStorage, "v1", "StorageClass", storageclass.Strategy, nil),
		groupStorage + "/volumeattachments":       kind(groupStorage, "v1", "VolumeAttachment", volumeattachment.Strategy, volumeattachment.StatusStrategy),
		groupStorage + "/volumeattributesclasses": kind(groupStorage, "v1", "VolumeAttributesClass", volumeattributesclass.Strategy, nil),

		groupStorageMigration + "/storageversionmigrations": kind(groupStorageMigration, "v1", "StorageVersionMigration",
			storagemigration.Strategy, storagemigration.StatusStrategy),

		groupNetworking + "/ipaddresses":  kind(groupNetworking, "v1", "IPAddress", ipaddress.Strategy, nil),
		groupNetworking + "/servicecidrs": kind(groupNetworking, "v1", "ServiceCIDR", servicecidr.Strategy, servicecidr.StatusStrategy),

		groupAPIRegistration + "/apiservices": apiservices,
	}
}

// podSubStrategies are kube's strategies of the pods subresources that
// update a pod: ephemeralcontainers and resize.
func podSubStrategies() map[string]rest.RESTUpdateStrategy {
	return map[string]rest.RESTUpdateStrategy{
		"ephemeralcontainers": pod.EphemeralContainersStrategy,
		"resize":              pod.ResizeStrategy,
	}
}

// groupsResources are the served resources of the kinds this file adds,
// as kube-apiserver v1.37.2 describes them in discovery.
func groupsResources() []*resource {
	res := func(group, version, plural, singular, kind string, namespaced, status bool, short ...string) *resource {
		return &resource{group: group, version: version, plural: plural, singular: singular, kind: kind,
			namespaced: namespaced, hasStatus: status, shortNames: short}
	}
	fields := func(r *resource, f map[string][]string) *resource {
		r.fields = f
		return r
	}
	hpa := res(groupAutoscaling, "v2", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", true, true, "hpa")
	hpa.categories = []string{"all"}
	csrs := fields(res(groupCertificates, "v1", "certificatesigningrequests", "certificatesigningrequest", "CertificateSigningRequest", false, true, "csr"),
		map[string][]string{"spec.signerName": {"spec", "signerName"}})
	csrs.subresources = []string{"approval"}
	apiservices := res(groupAPIRegistration, "v1", "apiservices", "apiservice", "APIService", false, true)
	apiservices.keyGroup = groupAPIRegistration
	apiservices.categories = []string{"api-extensions"}
	// Stored as another version (convert.go): autoscaling/v1 in the v2
	// HPAs' keys, events.k8s.io/v1 in core v1 Events' keys, selected by
	// the fields kube maps to the stored ones.
	hpaV1 := res(groupAutoscaling, "v1", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", true, true, "hpa")
	hpaV1.categories = []string{"all"}
	events := fields(res(groupEvents, "v1", "events", "event", "Event", true, false, "ev"), map[string][]string{
		"regarding.kind":            {"involvedObject", "kind"},
		"regarding.namespace":       {"involvedObject", "namespace"},
		"regarding.name":            {"involvedObject", "name"},
		"regarding.uid":             {"involvedObject", "uid"},
		"regarding.apiVersion":      {"involvedObject", "apiVersion"},
		"regarding.resourceVersion": {"involvedObject", "resourceVersion"},
		"regarding.fieldPath":       {"involvedObject", "fieldPath"},
		"reportingController":       {"reportingComponent"},
		"reason":                    {"reason"},
		"type":                      {"type"},
	})
	for _, r := range []*resource{hpaV1, events} {
		r.converted, r.rewriteVersion = true, true
	}
	return []*resource{
		hpa,
		hpaV1,
		events,
		csrs,
		fields(res(groupCertificates, "v1", "clustertrustbundles", "clustertrustbundle", "ClusterTrustBundle", false, false),
			map[string][]string{"spec.signerName": {"spec", "signerName"}}),
		fields(res(groupCertificates, "v1", "podcertificaterequests", "podcertificaterequest", "PodCertificateRequest", true, true),
			map[string][]string{
				"spec.signerName": {"spec", "signerName"},
				"spec.podName":    {"spec", "podName"},
				"spec.nodeName":   {"spec", "nodeName"},
			}),
		res(groupFlowcontrol, "v1", "flowschemas", "flowschema", "FlowSchema", false, true),
		res(groupFlowcontrol, "v1", "prioritylevelconfigurations", "prioritylevelconfiguration", "PriorityLevelConfiguration", false, true),
		res(groupNode, "v1", "runtimeclasses", "runtimeclass", "RuntimeClass", false, false),
		res(groupResourceDRA, "v1", "deviceclasses", "deviceclass", "DeviceClass", false, false),
		res(groupResourceDRA, "v1", "devicetaintrules", "devicetaintrule", "DeviceTaintRule", false, true),
		res(groupResourceDRA, "v1", "resourceclaims", "resourceclaim", "ResourceClaim", true, true),
		res(groupResourceDRA, "v1", "resourceclaimtemplates", "resourceclaimtemplate", "ResourceClaimTemplate", true, false),
		fields(res(groupResourceDRA, "v1", "resourceslices", "resourceslice", "ResourceSlice", false, false),
			map[string][]string{
				"spec.nodeName":  {"spec", "nodeName"},
				"spec.driver":    {"spec", "driver"},
				"spec.pool.name": {"spec", "pool", "name"},
			}),
		res(groupStorage, "v1", "csidrivers", "csidriver", "CSIDriver", false, false),
		res(groupStorage, "v1", "csinodes", "csinode", "CSINode", false, true),
		res(groupStorage, "v1", "csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity", true, false),
		res(groupStorage, "v1", "storageclasses", "storageclass", "StorageClass", false, false, "sc"),
		res(groupStorage, "v1", "volumeattachments", "volumeattachment", "VolumeAttachment", false, true),
		res(groupStorage, "v1", "volumeattributesclasses", "volumeattributesclass", "VolumeAttributesClass", false, false, "vac"),
		res(groupStorageMigration, "v1", "storageversionmigrations", "storageversionmigration", "StorageVersionMigration", false, true),
		res(groupNetworking, "v1", "ipaddresses", "ipaddress", "IPAddress", false, false, "ip"),
		res(groupNetworking, "v1", "servicecidrs", "servicecidr", "ServiceCIDR", false, true),
		apiservices,
	}
}

// groupsProtobuf add the served versions of the kinds this file adds to
// the protobuf scheme (protobuf.go).
var groupsProtobuf = []func(*runtime.Scheme) error{
	autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, eventsv1.AddToScheme, certificatesv1.AddToScheme, flowcontrolv1.AddToScheme, nodev1.AddToScheme,
	resourcev1.AddToScheme, storagev1.AddToScheme, storagemigrationv1.AddToScheme, apiregistrationv1.AddToScheme,
}

// serverKey carries the *Server of a write to the strategies that look
// things up (a namespace's labels, an authorization decision): kube's
// strategies are package values here, shared by every server.
type serverKey struct{}

func withServer(ctx context.Context, s *Server) context.Context {
	return context.WithValue(ctx, serverKey{}, s)
}

func serverFrom(ctx context.Context) *Server {
	s, _ := ctx.Value(serverKey{}).(*Server)
	return s
}

// ctxAuthorizer authorizes with the request's server's authorizer, as
// kube's strategies do with kube-apiserver's (resource claims' status,
// pod certificate requests' signing). Without one it has no opinion,
// which the strategies read as not allowed.
type ctxAuthorizer struct{}

func (ctxAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	s := serverFrom(ctx)
	if s == nil {
		return authorizer.DecisionNoOpinion, "no authorizer", nil
	}
	authz := s.authz
	if authz == nil {
		authz = auth.NewAuthorizer(nil) // system:masters, as the server's default
	}
	return auth.KubeAuthorizer{Authorizer: authz}.Authorize(ctx, a)
}

// ctxNamespaces reads namespaces from the request's server's storage, for
// the DRA strategies' admin-access check (the namespace's
// resource.kubernetes.io/admin-access label). Only Get is implemented;
// the strategies call nothing else.
type ctxNamespaces struct {
	corev1client.NamespaceInterface
}

func (ctxNamespaces) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Namespace, error) {
	s := serverFrom(ctx)
	nsGR := schema.GroupResource{Resource: "namespaces"}
	if s == nil {
		return nil, apierrors.NewNotFound(nsGR, name)
	}
	kv, err := s.store.Get(ctx, s.namespaces().key("", name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(nsGR, name)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	ns := &corev1.Namespace{}
	if err := json.Unmarshal(kv.Value, ns); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return ns, nil
}

var _ corev1client.NamespaceInterface = ctxNamespaces{}

// servesSub returns the subresource of info when it is one of res's
// subresources (resource.subresources) and the verb one kube serves on it
// (get, update, patch of a named object); "" otherwise.
func servesSub(res *resource, info *request.Info) string {
	if info.Subresource == "" || info.Name == "" || !slices.Contains(res.subresources, info.Subresource) {
		return ""
	}
	if info.Verb == "get" || info.Verb == "update" || info.Verb == "patch" {
		return info.Subresource
	}
	return ""
}

// subDiscovery is the discovery entry of r's subresource sub.
func subDiscovery(r *resource, sub string) wire.APIResource {
	return wire.APIResource{
		Name: r.plural + "/" + sub, Namespaced: r.namespaced, Kind: r.kind,
		Verbs: []string{"get", "patch", "update"},
	}
}
