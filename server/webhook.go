package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// Admission webhooks: kube-apiserver's own MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook plugins (k8s.io/apiserver), fed, as in kube,
// by informers of the webhook configurations and namespaces over a
// loopback client. Writes call them at kube's two points: mutating after
// decoding and defaulting, before the kind's strategy; validating after
// the strategy's validation, just before storage. Deletes go through the
// validating webhooks.

// Webhooks runs the informers the admission webhooks read. Made by
// Server.EnableWebhooks; whoever made it runs it.
type Webhooks struct {
	mutating   *mutating.Plugin
	validating *validating.Plugin
	factory    informers.SharedInformerFactory
	policies   *policies
	mpolicies  *mutatingPolicies // mapolicy.go
	builtin    *builtinAdmission // admitbuiltin.go
	stop       chan struct{}     // closed when Run returns: ResourceQuota's workers stop
	// resolver resolves a webhook's service to an endpoint; CRD
	// conversion webhooks use it too (crconvert.go).
	resolver endpointResolver
	// configs are the informers' stores of what the plugins act on:
	// webhook configurations, admission policies and their bindings.
	configs []cache.Store

	syncOnce sync.Once
	synced   chan struct{}
}

// EnableWebhooks makes the server call the admission webhooks its
// MutatingWebhookConfigurations and ValidatingWebhookConfigurations name.
// client reads them (and the namespaces, for namespaceSelector) with
// informers: it should be a privileged client of this server. Call it
// before serving; run the returned Webhooks (their informers) meanwhile.
// Until they have synced, writes wait (up to 10s, as kube) and are then
// refused.
//
// The same informers feed kube's ValidatingAdmissionPolicy plugin
// (policy.go), which evaluates CEL with dyn (params) and authz (the CEL
// authorizer; it may be nil), and kube's built-in admission plugins that
// plugins chooses (admitbuiltin.go).
func (s *Server) EnableWebhooks(client kubernetes.Interface, dyn dynamic.Interface, authz auth.Authorizer, plugins AdmissionPlugins) (*Webhooks, error) {
	f := informers.NewSharedInformerFactory(client, 0)
	mp, err := mutating.NewMutatingWebhook(nil)
	if err != nil {
		return nil, err
	}
	vp, err := validating.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return nil, err
	}
	// Services resolve to their endpoints (EndpointSlices), as kube's
	// aggregator routing does: no kube-proxy routes a ClusterIP here.
	slices, err := proxy.NewEndpointSliceListerGetter(f.Discovery().V1().EndpointSlices().Lister())
	if err != nil {
		return nil, err
	}
	resolver := endpointResolver{services: f.Core().V1().Services().Lister(), slices: slices}
	mp.SetServiceResolver(resolver)
	vp.SetServiceResolver(resolver)
	for _, p := range []interface {
		SetExternalKubeClientSet(kubernetes.Interface)
		SetExternalKubeInformerFactory(informers.SharedInformerFactory)
		InspectFeatureGates(featuregate.FeatureGate)
		ValidateInitialization() error
	}{mp, vp} {
		p.SetExternalKubeClientSet(client)
		p.SetExternalKubeInformerFactory(f)
		p.InspectFeatureGates(utilfeature.DefaultFeatureGate)
		if err := p.ValidateInitialization(); err != nil {
			return nil, err
		}
	}
	w := &Webhooks{mutating: mp, validating: vp, factory: f, resolver: resolver, synced: make(chan struct{}), stop: make(chan struct{})}
	if authz == nil {
		authz = auth.NewAuthorizer(nil)
	}
	if w.builtin, err = newBuiltinAdmission(client, dyn, f, authz, w.stop, plugins); err != nil {
		return nil, err
	}
	if w.policies, err = newPolicies(client, dyn, authz, w); err != nil {
		return nil, err
	}
	if w.mpolicies, err = newMutatingPolicies(client, dyn, authz, f); err != nil {
		return nil, err
	}
	// The webhook plugins registered the first two with f already; the
	// policy plugins ask f for the others when they start. f keeps one
	// informer per type, so all get the same ones.
	ar := f.Admissionregistration().V1()
	w.configs = []cache.Store{
		ar.MutatingWebhookConfigurations().Informer().GetStore(),
		ar.ValidatingWebhookConfigurations().Informer().GetStore(),
		ar.MutatingAdmissionPolicies().Informer().GetStore(),
		ar.MutatingAdmissionPolicyBindings().Informer().GetStore(),
		ar.ValidatingAdmissionPolicies().Informer().GetStore(),
		ar.ValidatingAdmissionPolicyBindings().Informer().GetStore(),
	}
	s.webhooks = w
	return w, nil
}

// idle reports whether there is nothing to admit with: the informers
// have synced and hold no webhook configuration, admission policy or
// binding. kube's plugins then let every request through unchanged, so a
// write skips building their attributes and calling them (3% of the
// server's CPU and 7% of its allocations under creates). The plugins read
// the same stores, so a configuration this misses (created just now) they
// would not have applied yet either.
func (w *Webhooks) idle() bool {
	if !w.isSynced() {
		return false
	}
	for _, s := range w.configs {
		if len(s.ListKeys()) > 0 {
			return false
		}
	}
	return true
}

// Run starts the informers, closes Synced once they have listed, and
// stops them (and ResourceQuota's workers) when ctx ends.
func (w *Webhooks) Run(ctx context.Context) error {
	defer close(w.stop)
	if err := w.policies.start(ctx); err != nil {
		return err
	}
	if err := w.mpolicies.start(ctx); err != nil {
		return err
	}
	w.factory.Start(ctx.Done())
	for typ, ok := range w.factory.WaitForCacheSync(ctx.Done()) {
		if !ok && ctx.Err() == nil {
			return fmt.Errorf("webhooks: informer of %v did not sync", typ)
		}
	}
	if ctx.Err() == nil && w.policies.waitSynced(ctx) && w.mpolicies.waitSynced(ctx) {
		w.syncOnce.Do(func() { close(w.synced) })
	}
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}

// isSynced reports whether Synced is closed.
func (w *Webhooks) isSynced() bool {
	select {
	case <-w.synced:
		return true
	default:
		return false
	}
}

// Synced is closed once the informers hold the configurations.
func (w *Webhooks) Synced() <-chan struct{} { return w.synced }

// endpointResolver resolves a webhook's service to one of its ready
// endpoints, with kube's proxy.ResolveEndpoint.
type endpointResolver struct {
	services corelisters.ServiceLister
	slices   proxy.EndpointSliceGetter
}

func (r endpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveEndpoint(r.services, r.slices, namespace, name, port)
}

// webhookAttrs are the admission attributes of c's write of obj (old: the
// stored object, nil on create; obj nil on delete), as kube's handlers
// build them: the served kind and resource, the subresource, the request's
// options, dry run and user.
func (c *call) webhookAttrs(op admission.Operation, gvk schema.GroupVersionKind, name string, obj, old runtime.Object) admission.Attributes {
	gvr := schema.GroupVersionResource{Group: c.res.group, Version: c.res.version, Resource: c.res.plural}
	sub := ""
	switch {
	case c.status:
		sub = "status"
	case c.finalize:
		sub = "finalize"
	case c.scale:
		sub = "scale"
	}
	q := c.r.URL.Query()
	dryRun := q["dryRun"]
	var opts runtime.Object
	switch op {
	case admission.Create:
		opts = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"},
			DryRun: dryRun, FieldManager: q.Get("fieldManager"), FieldValidation: q.Get("fieldValidation")}
	case admission.Update:
		opts = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{Kind: "UpdateOptions", APIVersion: "meta.k8s.io/v1"},
			DryRun: dryRun, FieldManager: q.Get("fieldManager"), FieldValidation: q.Get("fieldValidation")}
	case admission.Delete:
		opts = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/v1"},
			DryRun: dryRun}
	}
	var u user.Info
	if ru, ok := request.UserFrom(c.r.Context()); ok {
		u = auth.UserToKube(ru)
	}
	return admission.NewAttributesRecord(obj, old, gvk, c.ns, name, gvr, sub, op, opts, len(dryRun) > 0, u)
}

// admissionOn reports whether c's write (operation op) goes through
// admission: not the server's own (no response writer), not the scale
// subresource (whose admission sees the Scale, scale_admission.go), and
// only while there is a plugin to call: a webhook or policy, or one of
// kube's built-in plugins that acts on such a write (admitbuiltin.go).
func (c *call) admissionOn(op admission.Operation) bool {
	w := c.s.webhooks
	if w == nil || c.w == nil || c.scale {
		return false
	}
	if !w.idle() {
		return true
	}
	gr := schema.GroupResource{Group: c.res.group, Resource: c.res.plural}
	return w.builtin != nil && w.builtin.acts(op, gr, c.res.crd != "", c.ns, w.isSynced())
}

// webhookContext is the context the plugins run in: the request's, with
// its user and where the webhooks' warnings go.
func (c *call) webhookContext(create bool) context.Context {
	ctx := c.strategyContext(create)
	if ru, ok := request.UserFrom(c.r.Context()); ok {
		ctx = genericapirequest.WithUser(ctx, auth.UserToKube(ru))
	}
	return ctx
}

// writeOperation is kube's admission operation of a write: CREATE, or
// UPDATE of a stored object.
func writeOperation(create bool) admission.Operation {
	if create {
		return admission.Create
	}
	return admission.Update
}

// mutateTyped runs the mutating admission chain (MutatingAdmissionPolicies,
// then the mutating webhooks) over obj, a built-in kind's internal object
// (old: the stored one, nil on create). obj is changed in place, as kube
// converts the mutations back into it. As kube's admission chain, the
// chain runs a second time for the policies and webhooks that ask for it
// when a later one changed the object.
func (c *call) mutateTyped(t *typedKind, obj, old runtime.Object) error {
	if !c.admissionOn(writeOperation(old == nil)) {
		return nil
	}
	return c.mutate(t.external, admission.NewObjectInterfacesFromScheme(t.scheme), obj, old)
}

func (c *call) mutate(gvk schema.GroupVersionKind, o admission.ObjectInterfaces, obj, old runtime.Object) error {
	attrs := c.webhookAttrs(writeOperation(old == nil), gvk, c.attrsName(obj), obj, old)
	ctx := c.webhookContext(old == nil)
	// kube's order: MutatingAdmissionPolicy, then the webhooks (mapolicy.go).
	if err := c.s.webhooks.mutationChain(ctx, attrs, o); err != nil {
		return admissionError(err)
	}
	return nil
}

// validateTyped runs the validating webhooks over a built-in kind's
// internal object, after the strategy validated it.
func (c *call) validateTyped(t *typedKind, obj, old runtime.Object) error {
	if !c.admissionOn(writeOperation(old == nil)) {
		return nil
	}
	return c.validate(t.external, admission.NewObjectInterfacesFromScheme(t.scheme), obj, old, writeOperation(old == nil))
}

func (c *call) validate(gvk schema.GroupVersionKind, o admission.ObjectInterfaces, obj, old runtime.Object, op admission.Operation) error {
	return c.s.webhooks.validationChain(c.webhookContext(op == admission.Create), c.webhookAttrs(op, gvk, c.attrsName(obj), obj, old), o)
}

// attrsName is the name of admission's attributes, as kube's handlers
// give it: the path's, if it names one (a POST on a custom resource's
// object creates the body's object, but is admitted under the path's
// name), else obj's.
func (c *call) attrsName(obj runtime.Object) string {
	if c.name != "" || obj == nil {
		return c.name
	}
	name, _ := metaName(obj)
	return name
}

// validationChain is kube's validating admission chain:
// ValidatingAdmissionPolicy, then the webhooks.
func (w *Webhooks) validationChain(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	if w.builtin != nil {
		if err := w.builtin.before.Validate(ctx, attrs, o); err != nil {
			return admissionError(err)
		}
	}
	if !w.idle() {
		if err := w.policies.validate(ctx, attrs, o); err != nil {
			return admissionError(err)
		}
		if err := w.validating.Validate(ctx, attrs, o); err != nil {
			return admissionError(err)
		}
	}
	if w.builtin != nil {
		if err := w.builtin.validateQuota(ctx, attrs, o, w.isSynced()); err != nil {
			return admissionError(err)
		}
	}
	return nil
}

// customGVK is the kind of c's custom resource.
func (c *call) customGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: c.res.group, Version: c.res.version, Kind: c.res.kind}
}

// unstructuredOf is d as kube holds a custom resource, with the
// resourceVersion it has (a write's as the client sent it).
func unstructuredOf(d *doc) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(d.encodeFields()); err != nil {
		return nil, wire.NewInternalError(err)
	}
	return u, nil
}

// customObjects are a custom resource's write d and its stored object old
// (nil on create) as the admission plugins take them.
func customObjects(d, old *doc) (*unstructured.Unstructured, runtime.Object, error) {
	obj, err := unstructuredOf(d)
	if err != nil {
		return nil, nil, err
	}
	if old == nil {
		return obj, nil, nil
	}
	o, err := unstructuredOf(old)
	if err != nil {
		return nil, nil, err
	}
	return obj, o, nil
}

// mutateCustom runs the mutating webhooks over a custom resource's write
// d (old: the stored object, nil on create); their patches land in d.
func (c *call) mutateCustom(d, old *doc) error {
	if c.res.typed() != nil || !c.admissionOn(writeOperation(old == nil)) {
		return nil
	}
	obj, oldObj, err := customObjects(d, old)
	if err != nil {
		return err
	}
	before := obj.DeepCopy()
	if err := c.mutate(c.customGVK(), admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme), obj, oldObj); err != nil {
		return err
	}
	if reflect.DeepEqual(before.Object, obj.Object) {
		return nil // unchanged: d keeps its own encoding (1.0 stays 1.0)
	}
	b, err := obj.MarshalJSON()
	if err != nil {
		return wire.NewInternalError(err)
	}
	out, err := decodeDoc(b)
	if err != nil {
		return err
	}
	d.meta, d.rest = out.meta, out.rest
	return nil
}

// webhookValidateCustom runs the validating webhooks over a custom resource's
// write d, after its own validation (admit, admitCustom), just before it
// is stored. Built-in kinds are validated in admitTyped.
func (c *call) webhookValidateCustom(d, old *doc) error {
	if c.scale {
		return c.validateScale(d, old) // scale_admission.go
	}
	if c.res.typed() != nil || !c.admissionOn(writeOperation(old == nil)) {
		return nil
	}
	obj, oldObj, err := customObjects(d, old)
	if err != nil {
		return err
	}
	return c.validate(c.customGVK(), admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme), obj, oldObj, writeOperation(oldObj == nil))
}

// validateDelete runs the validating webhooks over the deletion of cur, as
// kube's stores do before deleting (operation DELETE, oldObject the
// stored object).
func (c *call) validateDelete(cur *doc, name string) error {
	if !c.admissionOn(admission.Delete) {
		return nil
	}
	var old runtime.Object
	var gvk schema.GroupVersionKind
	o := admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)
	if t := c.res.typed(); t != nil {
		obj, err := t.decodeStored(cur)
		if err != nil {
			return wire.NewInternalError(err)
		}
		old, gvk, o = obj, t.external, admission.NewObjectInterfacesFromScheme(t.scheme)
	} else {
		u, err := unstructuredOf(cur)
		if err != nil {
			return err
		}
		old, gvk = u, c.customGVK()
	}
	saved := c.name
	c.name = name
	defer func() { c.name = saved }()
	return c.validate(gvk, o, nil, old, admission.Delete)
}

// admissionError is the Status of an admission error: kube's own for its
// API errors, else a 500 with the error's text (reason Unknown), as
// kube's handlers answer an error that is not a Status.
func admissionError(err error) error {
	var api interface{ Status() metav1.Status }
	if errors.As(err, &api) {
		return kubeStatus(err)
	}
	return plainError(err)
}

func metaName(obj runtime.Object) (string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", errors.New("no metadata")
	}
	return m.GetName(), nil
}
