package server

import (
	"context"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Custom resources: what kube's custom-resource strategy decides before a
// write — generation 1 on create and bumped by any change outside
// metadata, and, with the status subresource, status dropped on create and
// kept as stored by writes to the main resource. Only its Prepare steps
// are used: schema validation, pruning and defaulting of custom resources
// are not done here.

// customStrategies are kube's strategy with and without the status
// subresource (what PrepareForCreate and PrepareForUpdate depend on).
var customStrategies = [2]interface {
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
}{
	customresource.NewStrategy(nil, true, schema.GroupVersionKind{}, nil, nil, nil, nil, nil, nil),
	customresource.NewStrategy(nil, true, schema.GroupVersionKind{}, nil, nil, nil, &apiextensions.CustomResourceSubresourceStatus{}, nil, nil),
}

// prepareCustom runs the strategy's PrepareForCreate (old nil) or
// PrepareForUpdate on d, a custom resource.
func (c *call) prepareCustom(d, old *doc) {
	st := customStrategies[0]
	if c.res.hasStatus {
		st = customStrategies[1]
	}
	obj, ok := unstructuredOf(d)
	if !ok {
		return
	}
	if old == nil {
		st.PrepareForCreate(c.r.Context(), obj)
	} else {
		was, ok := unstructuredOf(old)
		if !ok {
			return
		}
		st.PrepareForUpdate(c.r.Context(), obj, was)
	}
	b, err := obj.MarshalJSON()
	if err != nil {
		return
	}
	if out, err := decodeDoc(b); err == nil {
		d.meta, d.rest = out.meta, out.rest
	}
}

// unstructuredOf decodes d as kube holds a custom resource: integers as
// int64, other numbers as float64.
func unstructuredOf(d *doc) (*unstructured.Unstructured, bool) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(d.encode()); err != nil {
		return nil, false
	}
	return u, true
}
