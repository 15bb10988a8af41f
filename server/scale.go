package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strconv"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// The scale subresource of a custom resource, as kube's apiextensions
// server serves it (its ScaleREST): GET, PUT and PATCH of an
// autoscaling/v1 Scale made from the object's specReplicasPath,
// statusReplicasPath and labelSelectorPath. A write sets only the
// replicas at specReplicasPath and is then an update of the custom
// resource, with its rules (status kept, generation bumped, validation).
// Scales are served as JSON or YAML (a protobuf Accept alone is a 406, as
// for the custom resource itself), the built-in workloads' also as
// protobuf (writeScale); JSON and merge patches are accepted, as kube
// accepts for custom resources.

// invalidSpecReplicas marks a Scale made from an object without replicas
// at specReplicasPath, so that a patch that does not set them is refused.
const invalidSpecReplicas = math.MinInt32

// scaleOf makes the Scale of custom resource d, stored at revision rev,
// and reports whether d has replicas at specReplicasPath.
func scaleOf(d *doc, rev int64, sc *crScale) (*autoscalingv1.Scale, bool, error) {
	u, err := toUnstructured(d)
	if err != nil {
		return nil, false, err
	}
	spec, found, err := unstructured.NestedInt64(u.Object, splitPath(sc.SpecReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	status, _, err := unstructured.NestedInt64(u.Object, splitPath(sc.StatusReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	var selector string
	if p := sc.labelSelectorPath(); p != "" {
		if selector, _, err = unstructured.NestedString(u.Object, splitPath(p)...); err != nil {
			return nil, false, err
		}
	}
	if sc.builtinSelector {
		if selector, err = builtinSelector(u); err != nil {
			return nil, false, err
		}
	}
	s := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			CreationTimestamp: u.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: int32(spec)},
		Status: autoscalingv1.ScaleStatus{Replicas: int32(status), Selector: selector},
	}
	if rev > 0 {
		s.ResourceVersion = strconv.FormatInt(rev, 10)
	}
	return s, found, nil
}

// builtinSelector is the Scale selector of a built-in workload, as
// kube's scale REST writes it: spec.selector, a LabelSelector (apps) or a
// map of labels (ReplicationController), as a selector string.
func builtinSelector(u *unstructured.Unstructured) (string, error) {
	raw, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "selector")
	if err != nil || !found || raw == nil {
		return "", err
	}
	if u.GetKind() == "ReplicationController" {
		set, _, err := unstructured.NestedStringMap(u.Object, "spec", "selector")
		if err != nil {
			return "", err
		}
		return labels.SelectorFromSet(set).String(), nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return "", fmt.Errorf("spec.selector is %T", raw)
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return "", err
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return "", err
	}
	return sel.String(), nil
}

// getScale answers GET on /scale: 500 when the object has no replicas at
// specReplicasPath, as kube does.
func (c *call) getScale() error {
	kv, err := c.s.store.Get(c.r.Context(), c.res.key(c.ns, c.name))
	if err != nil {
		return storageError(err, c.res, c.name)
	}
	value := kv.Value
	if c.res.conv != nil {
		// Its replicas at this version's paths; converted each time, as
		// kube's GET.
		if value, err = c.res.conv.fresh(kv.Key, kv.Revision, kv.Value, c.res.apiVersion()); err != nil {
			return readError(err)
		}
	}
	value = c.res.relabel(value)
	d, err := decodeDoc(value)
	if err != nil {
		return wire.NewInternalError(err)
	}
	s, found, err := scaleOf(d, kv.Revision, c.res.scale)
	if err != nil {
		return wire.NewInternalError(err)
	}
	if !found {
		return wire.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", c.res.scale.SpecReplicasPath))
	}
	return c.writeScale(s)
}

// writeScale answers s, in protobuf when the client asks for it and the
// resource is a built-in workload: a custom resource's scale is served as
// JSON or YAML only, as kube's CRD handler negotiates it with the custom
// resource's media types (output).
func (c *call) writeScale(s *autoscalingv1.Scale) error {
	return c.writeExternal(http.StatusOK, "autoscaling/v1", "Scale", s)
}

// updateScale answers PUT on /scale.
func (c *call) updateScale() error {
	if err := c.checkWriteOptions("UpdateOptions"); err != nil {
		return err
	}
	ct := c.r.Header.Get("Content-Type")
	typ, _ := parseMediaRange(ct)
	if !isJSONContent(ct) && typ != contentProtobuf && typ != contentYAML {
		return unsupportedBody()
	}
	body, err := c.readBody()
	if err != nil {
		return err
	}
	if typ == contentYAML {
		j, err := sigsyaml.YAMLToJSON(body)
		if err != nil {
			return undecodable(nil, "Scale", err, body)
		}
		body = j
	}
	if typ == contentProtobuf { // client-go's default for built-in types
		if body, err = protobufToJSON(body); err != nil {
			return err
		}
	}
	s, err := c.decodeScale(body, false, nil)
	if err != nil {
		return err
	}
	if err := c.keyError(c.name); err != nil {
		return err
	}
	// A Scale's uid is the storage precondition of an update's (kube's
	// scale REST passes the request's preconditions on), checked first;
	// its resourceVersion (writeScaled) pins the revision written.
	expect, _ := updateRevision(s.ResourceVersion)
	return c.writeScaled(expect, func(cur *doc, _ *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		if err := c.uidPrecondition(string(s.UID), cur.metaString("uid")); err != nil {
			return nil, err
		}
		return s, nil
	})
}

// patchScale answers PATCH on /scale: the patch applies to the Scale.
// Strategic merge patches are kube's for built-in workloads only.
func (c *call) patchScale() error {
	ct, err := c.patchContentType()
	if err != nil {
		return err
	}
	body, err := c.readBody()
	if err != nil {
		return err
	}
	opts, err := c.checkPatchOptions(ct)
	if err != nil {
		return err
	}
	if err := c.keyError(c.name); err != nil {
		return err
	}
	if ct == contentApplyPatch {
		if err := applyBody(body); err != nil {
			return err
		}
		// Applied to the Scale by its field manager, as kube's
		// applyPatcher does, which then records nothing more.
		c.applied = true
		return c.writeScaled(0, func(_ *doc, old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			return c.applyScale(opts, body, old)
		})
	}
	if !json.Valid(body) {
		return wire.NewBadRequest("invalid JSON patch")
	}
	return c.writeScaled(0, func(_ *doc, old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		cur, err := json.Marshal(old)
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		var patched []byte
		var bodyErrs strictErrors
		if ct == contentStrategicPatch {
			patched, err = strategicpatch.StrategicMergePatch(cur, body, &autoscalingv1.Scale{})
			if err != nil {
				return nil, strategicPatchError(err)
			}
		} else if patched, bodyErrs, err = c.applyJSONPatch(ct, cur, body); err != nil {
			return nil, err
		}
		return c.decodeScale(patched, true, bodyErrs)
	})
}

// writeScaled is the update of a custom resource through its scale: fn
// gives the Scale to write from the stored object's; its spec.replicas go
// to specReplicasPath, and the object is updated as by a PUT (with its
// strategy and validation). expect is a resourceVersion precondition, 0
// for none. The answer is the Scale of the object written.
func (c *call) writeScaled(expect int64, fn func(cur *doc, old *autoscalingv1.Scale) (*autoscalingv1.Scale, error)) error {
	sc := c.res.scale
	stored, err := c.s.guaranteedUpdate(c.r.Context(), c, expect, func(cur *doc) (*doc, error) {
		rev, _ := strconv.ParseInt(cur.metaString("resourceVersion"), 10, 64)
		old, found, err := scaleOf(cur, rev, sc)
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		if !found {
			old.Spec.Replicas = invalidSpecReplicas
		}
		fields, err := c.scaleFields(cur) // scale_fields.go
		if err != nil {
			return nil, err
		}
		if old.ManagedFields, err = fields.ToSubresource(); err != nil {
			return nil, wire.NewInternalError(err)
		}
		s, err := fn(cur, old)
		if err != nil {
			return nil, err
		}
		// Then as kube's scale REST makes the object from the Scale
		// (its UpdatedObject): the managed fields, admission's mutation,
		// the checks of the Scale; only then does kube's store read the
		// resourceVersion.
		if !c.applied { // an apply's fields are recorded by its Apply
			if err := c.manageScale(s, old); err != nil {
				return nil, err
			}
		}
		if s, err = c.mutateScale(s, old); err != nil { // scale_admission.go
			return nil, err
		}
		if s.Spec.Replicas == invalidSpecReplicas {
			return nil, wire.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", sc.SpecReplicasPath))
		}
		if c.res.crd == "" {
			if err := c.checkBuiltinScale(cur, s, old); err != nil {
				return nil, err
			}
		}
		if err := c.checkScaleRevision(s, old); err != nil {
			return nil, err
		}
		u, err := toUnstructured(cur)
		if err != nil {
			return nil, err
		}
		if err := unstructured.SetNestedField(u.Object, int64(s.Spec.Replicas), splitPath(sc.SpecReplicasPath)...); err != nil {
			return nil, wire.NewInternalError(err)
		}
		spec := splitPath(sc.SpecReplicasPath)[0]
		b, err := json.Marshal(u.Object[spec])
		if err != nil {
			return nil, wire.NewInternalError(err)
		}
		next := &doc{apiVersion: c.res.apiVersion(), kind: cur.kind, meta: cloneRaw(cur.meta), rest: cloneRaw(cur.rest)}
		next.rest[spec] = b
		delete(next.meta, "resourceVersion")
		if err := setScaleFields(next, fields, s); err != nil {
			return nil, err
		}
		return next, nil
	})
	if err != nil {
		return err
	}
	if stored, err = c.servedWritten(stored); err != nil {
		return err
	}
	d, err := decodeDoc(stored)
	if err != nil {
		return wire.NewInternalError(err)
	}
	rev, _ := strconv.ParseInt(d.metaString("resourceVersion"), 10, 64)
	s, _, err := scaleOf(d, rev, sc)
	if err != nil {
		return wire.NewBadRequest(err.Error())
	}
	return c.writeScale(s)
}

// checkBuiltinScale is what the scale REST of kube's built-in workloads
// (Deployments, ReplicaSets, StatefulSets, ReplicationControllers) checks
// of the Scale s to write, once mutated, before it sets the replicas of
// cur: the Scale's validation (kind Scale, 422), then its uid, when set,
// as a precondition on cur's (409; a PUT's uid was already the storage
// precondition, updateScale, so this is a patch's). The apiextensions
// server's scale REST checks neither (a custom resource is validated as
// itself).
func (c *call) checkBuiltinScale(cur *doc, s, old *autoscalingv1.Scale) error {
	in, oldIn, err := internalScales(s, old)
	if err != nil {
		return err
	}
	// kube's field manager gives a subresource's object the live
	// object's managedFields before this, whatever the client sent.
	in.ManagedFields, oldIn.ManagedFields = nil, nil
	if errs := autoscalingvalidation.ValidateScaleUpdate(c.strategyContext(false), in, oldIn, legacyscheme.Scheme, builtinScaleKind{}); len(errs) > 0 {
		return kubeStatus(apierrors.NewInvalid(autoscaling.Kind("Scale"), cur.metaString("name"), errs))
	}
	if uid := cur.metaString("uid"); s.UID != "" && string(s.UID) != uid {
		return wire.NewConflict(wire.GroupResource{Group: c.res.group, Resource: c.res.plural + "/scale"}, cur.metaString("name"),
			fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", s.UID, uid))
	}
	return nil
}

// checkScaleRevision reads the resourceVersion of s, the Scale to write
// once mutating admission has run, as kube's store reads the object's the
// scale REST made (the Scale's, when set; else the stored object's own):
// one that does not parse is the update's 500 (newRevision), and it must
// be old's, the stored object's (a 409 when stale).
func (c *call) checkScaleRevision(s, old *autoscalingv1.Scale) error {
	if s.ResourceVersion == "" {
		return nil
	}
	stored, _ := strconv.ParseInt(old.ResourceVersion, 10, 64)
	_, err := c.writeRevision(s.ResourceVersion, stored)
	return err
}

// builtinScaleKind is the Scale kind of the built-in workloads' scale
// subresource in the versions serve serves (apps/v1, v1), as their kube
// scale REST objects map it: autoscaling/v1.
type builtinScaleKind struct{}

func (builtinScaleKind) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// decodeScale decodes a Scale sent to /scale (patched: the result of a
// patch): of kind Scale in autoscaling/v1 (both may be left out), named
// as the URL (the name may not be left out), in its namespace. Its metadata is decoded as any object's,
// with the request's field validation.
func (c *call) decodeScale(b []byte, patched bool, bodyErrs strictErrors) (*autoscalingv1.Scale, error) {
	if err := checkDepth(b); err != nil {
		return nil, err
	}
	d, err := decodeDoc(b)
	if err != nil {
		return nil, err
	}
	c.scaleUntyped = !patched && (d.kind == "" || d.apiVersion == "")
	if d.kind == "" {
		d.kind = "Scale"
	}
	if d.apiVersion == "" {
		d.apiVersion = "autoscaling/v1"
	}
	if d.kind != "Scale" || d.apiVersion != "autoscaling/v1" {
		return nil, wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a Scale: no kind %q is registered for version %q",
			d.kind, versionOf(d.apiVersion), d.kind, d.apiVersion))
	}
	if patched {
		d.strict = append(bodyErrs, d.strict...)
		err = c.checkPatched(d, b)
	} else {
		err = c.checkDecoded(d)
	}
	if err != nil {
		return nil, err
	}
	var s autoscalingv1.Scale
	if err := json.Unmarshal(d.encode(), &s); err != nil {
		return nil, wire.NewBadRequest(fmt.Sprintf("Scale in version \"v1\" cannot be handled as a Scale: %v", err))
	}
	s.ResourceVersion = d.metaString("resourceVersion") // as sent: updateRevision reads it
	// kube's update and patch handlers check the namespace, then the name
	// (handlers/rest.go checkName), which a Scale must carry as any
	// object must: the URL's does not stand in for a missing one.
	if s.Namespace != "" && s.Namespace != c.ns {
		return nil, wire.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if err := c.checkName(d); err != nil {
		return nil, err
	}
	return &s, nil
}

func versionOf(apiVersion string) string {
	for i := len(apiVersion) - 1; i >= 0; i-- {
		if apiVersion[i] == '/' {
			return apiVersion[i+1:]
		}
	}
	return apiVersion
}

// validateCRDSubresources checks a CRD's scale subresources as kube's
// CRD validation does: its paths are simple JSON paths under .spec
// (specReplicasPath), .status (statusReplicasPath) and either
// (labelSelectorPath). As kube's conversion to its internal form does,
// subresources the same in every version are checked once, at
// spec.subresources.
func validateCRDSubresources(d *doc) []wire.StatusCause {
	var spec crdSpec
	if !d.field("spec", &spec) || len(spec.Versions) == 0 {
		return nil
	}
	type subresources struct {
		status bool
		scale  crScale
		hasSc  bool
	}
	of := func(i int) subresources {
		v := spec.Versions[i].Subresources
		s := subresources{status: v.Status != nil, hasSc: v.Scale != nil}
		if v.Scale != nil {
			s.scale = *v.Scale
		}
		return s
	}
	identical := true
	for i := range spec.Versions {
		if !reflect.DeepEqual(of(i), of(0)) {
			identical = false
		}
	}
	var errs field.ErrorList
	check := func(sc *crScale, path *field.Path) {
		if sc == nil {
			return
		}
		errs = append(errs, crdvalidation.ValidateCustomResourceDefinitionSubresources(&apiextensions.CustomResourceSubresources{
			Scale: &apiextensions.CustomResourceSubresourceScale{
				SpecReplicasPath: sc.SpecReplicasPath, StatusReplicasPath: sc.StatusReplicasPath,
				LabelSelectorPath: sc.LabelSelectorPath,
			},
		}, path)...)
	}
	if identical {
		check(spec.Versions[0].Subresources.Scale, field.NewPath("spec", "subresources"))
	} else {
		for i, v := range spec.Versions {
			check(v.Subresources.Scale, field.NewPath("spec", "versions").Index(i).Child("subresources"))
		}
	}
	return fieldCauses(errs)
}

// servesScale reports whether the request is to a scale subresource the
// resource serves: GET, PUT or PATCH of one object's /scale.
func servesScale(res *resource, info *request.Info) bool {
	return info.Subresource == "scale" && res.scale != nil && info.Name != "" &&
		(info.Verb == "get" || info.Verb == "update" || info.Verb == "patch")
}

// scaleDiscovery is the discovery entry of r's scale subresource: kind
// Scale in autoscaling/v1, as kube lists it.
func scaleDiscovery(r *resource) wire.APIResource {
	return wire.APIResource{
		Name: r.plural + "/scale", Namespaced: r.namespaced,
		Group: "autoscaling", Version: "v1", Kind: "Scale",
		Verbs: []string{"get", "patch", "update"},
	}
}

// customSubresource is kube's answer to a request to a custom resource's
// subresource that is not served: 405 for a verb its status or scale
// subresource does not have, 404 naming the object for a subresource the
// CRD does not declare.
func customSubresource(res *resource, info *request.Info) error {
	if res.crd == "" || info.Subresource == "" || info.Name == "" {
		return nil
	}
	if info.Subresource == "status" && res.hasStatus || info.Subresource == "scale" && res.scale != nil {
		if info.Verb == "get" || info.Verb == "update" || info.Verb == "patch" {
			return nil
		}
		return wire.NewMethodNotSupported(res.gr(), info.Verb)
	}
	return wire.NewNotFound(res.gr(), info.Name)
}
