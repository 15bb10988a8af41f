package server

import (
	"strconv"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/autoscaling"

	"github.com/listwatch/listwatch/wire"
)

// Admission of writes through /scale, as kube's scale REST storages
// (apps, ReplicationControllers, custom resources) run it: the mutating
// chain (policies, webhooks) over the Scale sent, with the stored
// object's Scale as the old object, before the replicas are written into
// the object; the validating chain (policies, webhooks) over the Scales
// of the object as it is about to be stored and of the stored one, after
// the object's own validation. Both see operation UPDATE, kind
// autoscaling/v1 Scale, the object's resource and subresource "scale".

var scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// scaleAdmissionOn reports whether c is a write through /scale that
// admission sees (not the server's own writes).
func (c *call) scaleAdmissionOn() bool {
	return c.s.webhooks != nil && c.w != nil && c.scale
}

// internalScale is s as kube's admission chain holds it.
func internalScale(s *autoscalingv1.Scale) (*autoscaling.Scale, error) {
	out := &autoscaling.Scale{}
	if err := legacyscheme.Scheme.Convert(s, out, nil); err != nil {
		return nil, wire.NewInternalError(err)
	}
	return out, nil
}

// internalScales are s and old as kube's internal Scales.
func internalScales(s, old *autoscalingv1.Scale) (*autoscaling.Scale, *autoscaling.Scale, error) {
	in, err := internalScale(s)
	if err != nil {
		return nil, nil, err
	}
	oldIn, err := internalScale(old)
	if err != nil {
		return nil, nil, err
	}
	return in, oldIn, nil
}

// mutateScale runs the mutating admission chain over s, the Scale to
// write (old: the stored object's), and returns it as mutated.
func (c *call) mutateScale(s, old *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	if !c.scaleAdmissionOn() {
		return s, nil
	}
	in, oldIn, err := internalScales(s, old)
	if err != nil {
		return nil, err
	}
	if err := c.mutate(scaleGVK, admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme), in, oldIn); err != nil {
		return nil, err
	}
	out := &autoscalingv1.Scale{}
	if err := legacyscheme.Scheme.Convert(in, out, nil); err != nil {
		return nil, wire.NewInternalError(err)
	}
	out.TypeMeta = s.TypeMeta
	return out, nil
}

// validateScale runs the validating admission chain over the Scales of d,
// the object about to be stored, and of old, the stored one.
func (c *call) validateScale(d, old *doc) error {
	if !c.scaleAdmissionOn() {
		return nil
	}
	rev := revisionOf(old)
	scales := make([]*autoscaling.Scale, 2)
	for i, o := range []*doc{d, old} {
		s, _, err := scaleOf(o, rev, c.res.scale)
		if err != nil {
			return wire.NewInternalError(err)
		}
		if scales[i], err = internalScale(s); err != nil {
			return err
		}
	}
	return c.validate(scaleGVK, admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme), scales[0], scales[1], admission.Update)
}

// revisionOf is d's resourceVersion as a revision, 0 without one.
func revisionOf(d *doc) int64 {
	rev, _ := strconv.ParseInt(d.metaString("resourceVersion"), 10, 64)
	return rev
}
