package server

import (
	"encoding/json"
	"fmt"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/listwatch/listwatch/wire"
)

// A write through /scale records its managed fields as kube's scale
// REST objects do: the object's managedFields become the Scale's
// (managedfields.ScaleHandler: the replicas path of the object is the
// Scale's spec.replicas), the Scale's field manager records the write,
// before mutating admission, and the Scale's managedFields go back to the
// object's. An entry ScaleHandler makes for the scale subresource carries
// no time, as in kube.

// scaleFields is the ScaleHandler of a write through /scale to cur.
func (c *call) scaleFields(cur *doc) (*managedfields.ScaleHandler, error) {
	var entries []metav1.ManagedFieldsEntry
	if b, ok := cur.meta["managedFields"]; ok {
		if err := json.Unmarshal(b, &entries); err != nil {
			return nil, wire.NewInternalError(err)
		}
	}
	gv := schema.GroupVersion{Group: c.res.group, Version: c.res.version}
	paths := c.res.scale.replicasPaths
	if paths == nil { // a built-in kind: no entry of an older version survives a write
		paths = managedfields.ResourcePathMappings{gv.String(): replicasPath(c.res.scale.SpecReplicasPath)}
	}
	return managedfields.NewScaleHandler(entries, gv, paths), nil
}

// replicasPath is a scale subresource's specReplicasPath as a field path.
func replicasPath(specReplicasPath string) fieldpath.Path {
	return fieldpath.MakePathOrDie(splitPathAny(specReplicasPath)...)
}

// crdReplicasPaths maps every version of a CRD, served or not, to its
// replicas path, nil for a version without a scale subresource (kube's
// crdHandler's replicasPathInCustomResource).
func crdReplicasPaths(spec *crdSpec) managedfields.ResourcePathMappings {
	m := managedfields.ResourcePathMappings{}
	for _, v := range spec.Versions {
		gv := schema.GroupVersion{Group: spec.Group, Version: v.Name}.String()
		if sc := v.Subresources.Scale; sc != nil {
			m[gv] = replicasPath(sc.SpecReplicasPath)
		} else {
			m[gv] = nil
		}
	}
	return m
}

// splitPathAny is splitPath's elements as fieldpath.MakePath takes them.
func splitPathAny(p string) []any {
	parts := splitPath(p)
	out := make([]any, len(parts))
	for i, s := range parts {
		out[i] = s
	}
	return out
}

// scaleFieldManager is the field manager of autoscaling/v1 Scale, the
// object of every /scale subresource.
var scaleFieldManager = sync.OnceValues(func() (*managedfields.FieldManager, error) {
	tc, err := builtinTypeConverter()
	if err != nil {
		return nil, err
	}
	s := legacyscheme.Scheme
	return managedfields.NewDefaultFieldManager(tc, s, s, s, autoscalingv1.SchemeGroupVersion.WithKind("Scale"),
		schema.GroupVersion{Group: autoscalingv1.GroupName, Version: runtime.APIVersionInternal}, "scale", nil)
})

// manageScale records the write of s over old (its managedFields from
// scaleFields) in s's managedFields, as kube's handler does before
// admission.
func (c *call) manageScale(s, old *autoscalingv1.Scale) error {
	if skipManagedFields || c.r.ContentLength > largeBody {
		return nil
	}
	if c.res.crd != "" && c.scaleUntyped {
		// kube-apiserver v1.37's field manager of a custom resource's
		// Scale cannot convert one decoded without apiVersion and kind:
		// the update fails and keeps the live Scale's managed fields
		// (UpdateNoErrors), so the write is recorded for no one.
		s.ManagedFields = old.ManagedFields
		return nil
	}
	fm, err := scaleFieldManager()
	if err != nil {
		return wire.NewInternalError(err)
	}
	in, oldIn, err := internalScales(s, old)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(fm.UpdateNoErrors(oldIn, in, c.manager()))
	if err != nil {
		return wire.NewInternalError(err)
	}
	s.ManagedFields = m.GetManagedFields()
	return nil
}

// setScaleFields makes the Scale's managedFields, through h, next's.
func setScaleFields(next *doc, h *managedfields.ScaleHandler, s *autoscalingv1.Scale) error {
	entries, err := h.ToParent(s.ManagedFields)
	if err != nil {
		return wire.NewInternalError(err)
	}
	return setManagedFields(next, entries)
}

// applyScale applies a server-side apply configuration of a Scale to old
// (its managedFields from scaleFields) with the Scale's field manager, as
// kube's applyPatcher applies one sent to /scale.
func (c *call) applyScale(opts *metav1.PatchOptions, body []byte, old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	fm, err := scaleFieldManager()
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	obj, patchObj, err := c.runApply(fm, opts, body, func() (runtime.Object, error) { return internalScale(old) })
	if err != nil {
		return nil, err
	}
	out := &autoscalingv1.Scale{}
	if err := legacyscheme.Scheme.Convert(obj, out, nil); err != nil {
		return nil, wire.NewInternalError(err)
	}
	out.APIVersion, out.Kind = "autoscaling/v1", "Scale"
	if c.res.crd != "" && !sameScale(out, old) {
		// kube-apiserver v1.37's field manager of a custom resource's
		// Scale converts the applied object with the CRD's converter,
		// which knows no Scale: an apply that changes the Scale fails so.
		return nil, plainError(fmt.Errorf("failed to convert new object (%s/%s; autoscaling/v1, Kind=Scale) to proper version: "+
			"request to convert CR to an invalid group/version: autoscaling/v1", patchObj.GetNamespace(), patchObj.GetName()))
	}
	// As kube's patcher, which checks the applied object's namespace and
	// then its name against the URL's.
	if c.ns != "" && out.Namespace != "" && out.Namespace != c.ns {
		return nil, wire.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if out.Name != c.name {
		return nil, wire.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", out.Name, c.name))
	}
	return out, nil
}

// sameScale reports whether an applied Scale is old but for its managed
// fields: kube's apply then changes nothing but them.
func sameScale(applied, old *autoscalingv1.Scale) bool {
	a, o := applied.DeepCopy(), old.DeepCopy()
	a.ManagedFields, o.ManagedFields = nil, nil
	a.TypeMeta, o.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	return equality.Semantic.DeepEqual(a, o)
}
