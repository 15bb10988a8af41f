package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listwatch/listwatch/wire"
)

// A custom resource's write rules are kube's own: the apiextensions
// server's customresource strategy decides what a create keeps of status
// and when an update bumps metadata.generation, run on an Unstructured
// copy of the object being written. The object written keeps the
// server's own encoding; only the strategy's decisions are carried back
// (status dropped, generation), so a write's bytes do not depend on a
// round trip through maps.

// crPreparer is the part of customresource's strategy the server uses.
type crPreparer interface {
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
}

// crScale is a CRD version's scale subresource: where the replicas and
// the selector live in its objects.
type crScale struct {
	SpecReplicasPath   string  `json:"specReplicasPath"`
	StatusReplicasPath string  `json:"statusReplicasPath"`
	LabelSelectorPath  *string `json:"labelSelectorPath,omitempty"`
	// builtinSelector: a built-in kind (Deployment, ReplicaSet,
	// StatefulSet, ReplicationController) whose Scale's selector is its
	// spec.selector written as a string, as kube's scale REST does.
	builtinSelector bool
	// replicasPaths maps every version of a CRD to its replicas path
	// (nil for a CRD version without a scale subresource), as kube's
	// scale REST gives managedfields.ScaleHandler: a managed-fields entry
	// of a version not in it is dropped by a write through /scale.
	replicasPaths managedfields.ResourcePathMappings
}

// labelSelectorPath is the selector path, "" when the CRD has none.
func (sc *crScale) labelSelectorPath() string {
	if sc == nil || sc.LabelSelectorPath == nil {
		return ""
	}
	return *sc.LabelSelectorPath
}

// newCRStrategy is kube's strategy for one served version of a CRD: the
// status and scale subresources decide its rules. No schema: the server
// validates metadata itself and does not validate against a CRD's
// openAPIV3Schema.
func newCRStrategy(group, version, kind string, namespaced, status bool, scale *crScale) crPreparer {
	var st *apiextensions.CustomResourceSubresourceStatus
	if status {
		st = &apiextensions.CustomResourceSubresourceStatus{}
	}
	var sc *apiextensions.CustomResourceSubresourceScale
	if scale != nil {
		sc = &apiextensions.CustomResourceSubresourceScale{
			SpecReplicasPath: scale.SpecReplicasPath, StatusReplicasPath: scale.StatusReplicasPath,
			LabelSelectorPath: scale.LabelSelectorPath,
		}
	}
	gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	return customresource.NewStrategy(nil, namespaced, gvk, nil, nil, nil, st, sc, nil)
}

// toUnstructured decodes d's encoding as kube's custom resource codec
// does: integers as int64, other numbers as float64.
func toUnstructured(d *doc) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(d.encode()); err != nil {
		return nil, wire.NewInternalError(err)
	}
	return u, nil
}

// admitCustom applies kube's custom resource strategy to d, written
// over old (nil on create): its PrepareForCreate or PrepareForUpdate,
// then the validation the scale subresource adds. Built-ins pass as they
// are.
func (c *call) admitCustom(d, old *doc) error {
	if c.res.crd == "" {
		return nil
	}
	// Again after mutating admission, as kube's storage coerces what the
	// webhooks made; silently (admit checked the client's).
	coerceCustomMeta(d)
	if c.res.schema != nil {
		if err := c.schemaCoerce(d, false); err != nil {
			return err
		}
	}
	var err error
	if old == nil {
		err = c.prepareCustomCreate(d)
	} else {
		err = c.prepareCustomUpdate(d, old)
	}
	if err != nil {
		return err
	}
	if c.res.schema != nil {
		return c.validateSchema(d, old)
	}
	if err := c.validateCustomMeta(d, old); err != nil {
		return err
	}
	return c.validateCustom(d)
}

// validateCustomMeta is the metadata validation kube's custom-resource
// strategy runs (ValidateObjectMetaAccessor on create, and
// ValidateObjectMetaAccessorUpdate on update): owner references need a
// uid, finalizer names must be qualified, and so on. What the server's
// own metadata checks already refused never gets here.
func (c *call) validateCustomMeta(d, old *doc) error {
	u, err := toUnstructured(d)
	if err != nil {
		return err
	}
	path := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaAccessor(u, c.res.namespaced, apivalidation.NameIsDNSSubdomain, path)
	if old != nil {
		was, err := toUnstructured(old)
		if err != nil {
			return err
		}
		// The write is at the stored revision (updateFrom checked
		// the client's), as kube's store sets it before validating.
		rv := old.metaString("resourceVersion")
		u.SetResourceVersion(rv)
		was.SetResourceVersion(rv)
		errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(u, was, path)...)
	}
	if len(errs) == 0 {
		return nil
	}
	return kubeStatus(apierrors.NewInvalid(schema.GroupKind{Group: c.res.group, Kind: d.kind}, d.metaString("name"), errs)) // the object's kind, as kube's BeforeCreate and BeforeUpdate name it
}

// prepareCustomCreate applies kube's PrepareForCreate of a custom
// resource to d: status is dropped when the status subresource is served,
// and generation is 1.
func (c *call) prepareCustomCreate(d *doc) error {
	if c.res.crd == "" || c.res.strategy == nil {
		return nil
	}
	u, err := toUnstructured(d)
	if err != nil {
		return err
	}
	c.res.strategy.PrepareForCreate(c.r.Context(), u)
	if _, ok := u.Object["status"]; !ok {
		delete(d.rest, "status")
	}
	d.setMeta("generation", u.GetGeneration())
	return nil
}

// prepareCustomUpdate applies kube's PrepareForUpdate of a custom
// resource to next, the object replacing old on a write to the main
// resource (its scale subresource included): status is the stored one
// with the status subresource, and generation is old's, plus one when
// anything but metadata changed. A write to /status keeps old's
// generation (kube's status strategy copies old and sets only status),
// which prepareUpdate has done already.
func (c *call) prepareCustomUpdate(next, old *doc) error {
	if c.res.crd == "" || c.res.strategy == nil || c.status {
		return nil
	}
	n, err := toUnstructured(next)
	if err != nil {
		return err
	}
	o, err := toUnstructured(old)
	if err != nil {
		return err
	}
	// The stored object as the request's version sees it (conversion
	// None relabels), and generation as BeforeUpdate leaves it: old's.
	o.SetAPIVersion(n.GetAPIVersion())
	n.SetGeneration(o.GetGeneration())
	c.res.strategy.PrepareForUpdate(c.r.Context(), n, o)
	if st, ok := n.Object["status"]; ok {
		b, err := json.Marshal(st)
		if err != nil {
			return wire.NewInternalError(err)
		}
		if !jsonEqual(b, next.rest["status"]) {
			next.rest["status"] = b
		}
	} else {
		delete(next.rest, "status")
	}
	if g := n.GetGeneration(); g != 0 {
		next.setMeta("generation", g)
	} else {
		delete(next.meta, "generation")
	}
	return nil
}

// compactJSON re-encodes b without insignificant space, so that equal
// values compare equal.
func compactJSON(b []byte) []byte {
	var out []byte
	var v any
	if json.Unmarshal(b, &v) == nil {
		out, _ = json.Marshal(v)
	}
	return out
}

func jsonEqual(a, b []byte) bool {
	return string(compactJSON(a)) == string(compactJSON(b))
}

// validateCustom is the part of kube's custom resource validation that
// the scale subresource adds: the replicas at specReplicasPath (not on
// /status writes) and statusReplicasPath are integers in [0, MaxInt32],
// and the selector at labelSelectorPath a string. old is nil on create.
func (c *call) validateCustom(d *doc) error {
	sc := c.res.scale
	if c.res.crd == "" || sc == nil {
		return nil
	}
	u, err := toUnstructured(d)
	if err != nil {
		return err
	}
	var errs field.ErrorList
	if !c.status {
		errs = append(errs, validateReplicas(u, sc.SpecReplicasPath)...)
	}
	errs = append(errs, validateReplicas(u, sc.StatusReplicasPath)...)
	if p := sc.labelSelectorPath(); p != "" {
		sel, _, err := unstructured.NestedString(u.Object, splitPath(p)...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(p), sel, err.Error()))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return invalid(c.res.qualifiedKind(), c.res.group, c.res.kind, d.metaString("name"), fieldCauses(errs)...)
}

// validateReplicas checks the replicas at path as kube's custom resource
// validator does.
func validateReplicas(u *unstructured.Unstructured, path string) field.ErrorList {
	n, _, err := unstructured.NestedInt64(u.Object, splitPath(path)...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, err.Error())}
	case n < 0:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, "should be a non-negative integer")}
	case n > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// splitPath splits a ".a.b" path into its fields, as kube does for the
// scale subresource's paths.
func splitPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

// fieldCauses turns kube's field errors into Status causes, as kube's
// NewInvalid does.
func fieldCauses(errs field.ErrorList) []wire.StatusCause {
	causes := make([]wire.StatusCause, 0, len(errs))
	for _, e := range errs {
		causes = append(causes, wire.StatusCause{Type: string(e.Type), Field: e.Field, Message: e.ErrorBody()})
	}
	return causes
}
