package server

import (
	"encoding/json"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
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
	path := fieldpath.MakePathOrDie(splitPathAny(c.res.scale.SpecReplicasPath)...)
	return managedfields.NewScaleHandler(entries, gv, managedfields.ResourcePathMappings{gv.String(): path}), nil
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
