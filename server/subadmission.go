package server

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
)

// This file runs admission for the subresources whose request body (or
// query) is not the object itself: a pod's eviction (CREATE of an
// Eviction) and the connect subresources (CONNECT with their options), as
// kube's create and connect handlers do.

// subAttrs are the admission attributes of a request on subresource sub
// of c's object: obj of kind gvk, operation op, options opts.
func (c *call) subAttrs(op admission.Operation, gvk schema.GroupVersionKind, sub string, obj, opts runtime.Object, dryRun bool) admission.Attributes {
	gvr := schema.GroupVersionResource{Group: c.res.group, Version: c.res.version, Resource: c.res.plural}
	var u user.Info
	if ru, ok := request.UserFrom(c.r.Context()); ok {
		u = auth.UserToKube(ru)
	}
	return admission.NewAttributesRecord(obj, nil, gvk, c.ns, c.name, gvr, sub, op, opts, dryRun, u)
}

// subContext is the context the admission plugins run in for such a
// request.
func (c *call) subContext() context.Context {
	ctx := genericapirequest.WithNamespace(c.r.Context(), c.ns)
	if ru, ok := request.UserFrom(c.r.Context()); ok {
		ctx = genericapirequest.WithUser(ctx, auth.UserToKube(ru))
	}
	return ctx
}

// subMutate runs the mutating chain over attrs' object (changed in place).
func (c *call) subMutate(attrs admission.Attributes, o admission.ObjectInterfaces) error {
	if !c.admissionOn(attrs.GetOperation()) {
		return nil
	}
	if err := c.s.webhooks.mutationChain(c.subContext(), attrs, o); err != nil {
		return admissionError(err)
	}
	return nil
}

// subValidate runs the validating chain (policies, then webhooks).
func (c *call) subValidate(attrs admission.Attributes, o admission.ObjectInterfaces) error {
	if !c.admissionOn(attrs.GetOperation()) {
		return nil
	}
	return c.s.webhooks.validationChain(c.subContext(), attrs, o)
}

// admitConnect admits a CONNECT on subresource sub with its decoded
// options, as kube's connect handler: the object is the options, of their
// v1 kind (PodExecOptions, …), no dry run, mutating then validating,
// before anything connects.
func (c *call) admitConnect(sub string, opts runtime.Object) error {
	if !c.admissionOn(admission.Connect) {
		return nil
	}
	gvk := corev1.SchemeGroupVersion.WithKind(reflect.TypeOf(opts).Elem().Name())
	attrs := c.subAttrs(admission.Connect, gvk, sub, opts, nil, false)
	o := admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)
	if err := c.subMutate(attrs, o); err != nil {
		return err
	}
	return c.subValidate(attrs, o)
}
