package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/filters"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// Server-side apply and managedFields, as kube-apiserver keeps them: every
// write goes through a managedfields.FieldManager (UpdateNoErrors for
// create, update and non-apply patches, Apply for apply patches) built as
// kube builds it: for built-ins from kube's generated OpenAPI definitions,
// for custom resources from the CRD's schema (apiextensions' OpenAPI
// builder), with the strategies' reset fields.

// builtinModels are the OpenAPI schemas of every served built-in kind and
// what they reference, as kube-apiserver builds them for its type
// converter; buildTypeConverter the converter itself.
var builtinModels = sync.OnceValues(func() (map[string]*spec.Schema, error) {
	defs := func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		m := kubeAndAggregatorDefinitions(ref) // openapi.go: APIServices too
		maps.Copy(m, apiextensionsopenapi.GetOpenAPIDefinitions(ref))
		return m
	}
	cfg := genericapiserver.DefaultOpenAPIV3Config(defs, openapinamer.NewDefinitionNamer(legacyscheme.Scheme, crdScheme, aggregatorScheme))
	var names []string
	for _, t := range typedKinds {
		obj, err := t.scheme.New(t.external)
		if err != nil {
			return nil, err
		}
		names = append(names, openapiutil.GetCanonicalTypeName(obj))
	}
	for _, gvk := range reviewKinds() { // identity.go
		obj, err := legacyscheme.Scheme.New(gvk)
		if err != nil {
			return nil, err
		}
		names = append(names, openapiutil.GetCanonicalTypeName(obj))
	}
	// The object of every /scale subresource (scale_fields.go), and a
	// service account's TokenRequest, whose fields the token
	// subresource's field manager records (satoken.go).
	names = append(names, openapiutil.GetCanonicalTypeName(&autoscalingv1.Scale{}),
		openapiutil.GetCanonicalTypeName(&authenticationv1.TokenRequest{}))
	return builder3.BuildOpenAPIDefinitionsForResources(cfg, names...)
})

var builtinTypeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	models, err := builtinModels()
	if err != nil {
		return nil, err
	}
	return managedfields.NewTypeConverter(models, false)
})

// fieldManagers caches the field managers: of a built-in kind by
// *typedKind and subresource, of a custom resource by *resource (a CRD
// change registers new resources) and subresource.
var fieldManagers sync.Map

type fieldManagerKey struct {
	key         any
	subresource string
}

// subresource is the request's subresource, as managedFields record it.
func (c *call) subresource() string {
	switch {
	case c.status:
		return "status"
	case c.scale:
		return "scale"
	case c.finalize:
		return "finalize"
	}
	// pods/ephemeralcontainers, pods/resize, certificatesigningrequests/
	// approval: kube's installer gives every subresource's path a field
	// manager that records it.
	return c.sub
}

// fieldManager is the field manager of the request's resource and
// subresource: of the built-in kind t, or of the custom resource when t
// is nil.
func (c *call) fieldManager(ctx context.Context, t *typedKind) (*managedfields.FieldManager, error) {
	sub := c.subresource()
	var key any = c.res
	if t != nil {
		key = t
	}
	k := fieldManagerKey{key, sub}
	if fm, ok := fieldManagers.Load(k); ok {
		return fm.(*managedfields.FieldManager), nil
	}
	var fm *managedfields.FieldManager
	var err error
	if t != nil {
		fm, err = typedFieldManager(t, sub)
	} else {
		fm, err = c.customFieldManager(ctx, sub)
	}
	if err != nil {
		return nil, err
	}
	fieldManagers.Store(k, fm)
	return fm, nil
}

func typedFieldManager(t *typedKind, sub string) (*managedfields.FieldManager, error) {
	tc, err := builtinTypeConverter()
	if err != nil {
		return nil, err
	}
	var st any = t.strategy
	switch sub {
	case "status":
		st = t.status
	case "finalize":
		st = t.finalize
	case "", "scale":
	default:
		// kube's installer takes the reset fields from the subresource's
		// REST, not its strategy: the approval REST of
		// certificatesigningrequests passes its strategy's on; the pods'
		// ephemeralcontainers and resize RESTs have none, though their
		// strategies reset all but what they write (a filter, which they
		// alone have), so their field managers reset nothing.
		st = t.subs[sub]
		if _, ok := st.(rest.ResetFieldsFilterStrategy); ok {
			st = nil
		}
	}
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if r, ok := st.(rest.ResetFieldsStrategy); ok {
		reset = fieldpath.NewExcludeFilterSetMap(r.GetResetFields())
	}
	return managedfields.NewDefaultFieldManager(tc, t.scheme, t.scheme, t.scheme, t.external, t.internal.GroupVersion(), sub, reset)
}

// customFieldManager builds the field manager of a custom resource from
// its CRD as kube's CRD handler does: the CRD's OpenAPI (merged over the
// built-ins', for ObjectMeta) as type converter, or a deduced one when
// there is none.
func (c *call) customFieldManager(ctx context.Context, sub string) (*managedfields.FieldManager, error) {
	crdRes, ok := c.s.reg.lookup(groupCRD, "v1", "customresourcedefinitions")
	if !ok {
		return nil, errors.New("customresourcedefinitions not served")
	}
	kv, err := c.s.store.Get(ctx, crdRes.key("", c.res.crd))
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(kv.Value, crd); err != nil {
		return nil, err
	}
	var tc managedfields.TypeConverter = managedfields.NewDeducedTypeConverter()
	if models, err := crdModels(crd); err == nil && len(models) > 0 {
		if tc, err = managedfields.NewTypeConverter(models, crd.Spec.PreserveUnknownFields); err != nil {
			return nil, err
		}
	}
	gv := schema.GroupVersion{Group: c.res.group, Version: c.res.version}
	kind := gv.WithKind(c.res.kind)
	var reset map[fieldpath.APIVersion]*fieldpath.Set
	if c.res.hasStatus {
		v := fieldpath.APIVersion(gv.String())
		if sub == "status" {
			reset = map[fieldpath.APIVersion]*fieldpath.Set{v: fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec"))}
		} else {
			reset = map[fieldpath.APIVersion]*fieldpath.Set{v: fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}
		}
	}
	conv := unstructuredConverter{}
	var convertor runtime.ObjectConvertor = conv
	if cv := c.res.conv; cv != nil && cv.safe != nil {
		convertor = cv.safe // a conversion webhook's versions differ in more than apiVersion
	}
	return managedfields.NewDefaultCRDFieldManager(tc, convertor, conv, conv, kind, gv, sub, fieldpath.NewExcludeFilterSetMap(reset))
}

// crdModels is kube's buildOpenAPIModelsForApply: the CRD's versions'
// OpenAPI merged over the built-in schemas.
func crdModels(crd *apiextensionsv1.CustomResourceDefinition) (map[string]*spec.Schema, error) {
	static, err := builtinModels()
	if err != nil {
		return nil, err
	}
	specs := []*spec3.OpenAPI{{Version: "3.0.0", Info: &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes CRD Swagger", Version: "v0.1.0"}},
		Components: &spec3.Components{Schemas: maps.Clone(static)}}}
	for _, v := range crd.Spec.Versions {
		s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, err
	}
	return merged.Components.Schemas, nil
}

// unstructuredConverter converts, defaults and creates custom resources
// for their field manager: versions differ only in apiVersion (the
// conversion strategy None), and defaults are the custom resource
// strategy's business.
type unstructuredConverter struct{}

func (unstructuredConverter) Convert(in, out, _ any) error {
	u, ok1 := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (unstructuredConverter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	out := u.DeepCopy()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()}); ok {
		out.SetAPIVersion(target.GroupVersion().String())
	}
	return out, nil
}

func (unstructuredConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (unstructuredConverter) Default(runtime.Object) {}

func (unstructuredConverter) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// managerOrUserAgent is kube's default manager name: the fieldManager
// parameter, else the User-Agent up to its first "/", printable
// characters only, at most 128 bytes.
func managerOrUserAgent(manager, userAgent string) string {
	if manager != "" {
		return manager
	}
	var b strings.Builder
	for _, r := range strings.Split(userAgent, "/")[0] {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metavalidation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// manager is the field manager name of a non-apply write.
func (c *call) manager() string {
	return managerOrUserAgent(c.r.URL.Query().Get("fieldManager"), c.r.UserAgent())
}

// checkWriteOptions reads a create's or update's query as kube's
// handlers do: decoded into CreateOptions or UpdateOptions (kind) by
// kube's parameter codec (400 if it does not decode), then validated by
// kube's ValidateCreateOptions or ValidateUpdateOptions, one 422 naming
// every bad field (dryRun, fieldManager, fieldValidation).
func (c *call) checkWriteOptions(kind string) error {
	var opts runtime.Object
	var validate func() field.ErrorList
	switch kind {
	case "CreateOptions":
		o := &metav1.CreateOptions{}
		opts, validate = o, func() field.ErrorList { return metavalidation.ValidateCreateOptions(o) }
	case "UpdateOptions":
		o := &metav1.UpdateOptions{}
		opts, validate = o, func() field.ErrorList { return metavalidation.ValidateUpdateOptions(o) }
	default:
		return wire.NewInternalError(fmt.Errorf("no options of kind %q", kind))
	}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(c.r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return wire.NewBadRequest(err.Error())
	}
	if errs := validate(); len(errs) > 0 {
		return kubeStatus(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs))
	}
	return nil
}

// checkPatchOptions decodes and validates a PATCH's options as kube does:
// its parameter codec (400), then ValidatePatchOptions (422: dryRun,
// fieldManager, fieldValidation, and for apply a fieldManager required,
// force only for apply).
func (c *call) checkPatchOptions(ct string) (*metav1.PatchOptions, error) {
	opts := &metav1.PatchOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(c.r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, wire.NewBadRequest(err.Error())
	}
	if errs := metavalidation.ValidatePatchOptions(opts, types.PatchType(ct)); len(errs) > 0 {
		return nil, kubeStatus(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs))
	}
	return opts, nil
}

// largeBody is the request body size beyond which a create or update
// records no managedFields: kube stores such objects without them as
// well once they make the object too large for storage (its handlers
// retry without managedFields), and computing them for hundreds of
// thousands of keys takes minutes.
const largeBody = 1 << 20

// skipManagedFields turns the bookkeeping of non-apply writes off; only
// the benchmark that measures its cost sets it.
var skipManagedFields bool

// manageTyped records the write of obj over old (nil on create) in obj's
// managedFields, as kube's handlers do before admission; a no-op for
// apply, whose field manager ran already.
func (c *call) manageTyped(t *typedKind, obj, old runtime.Object) (runtime.Object, error) {
	if c.applied || c.scale || skipManagedFields || c.r.ContentLength > largeBody { // a Scale's: manageScale
		return obj, nil
	}
	fm, err := c.fieldManager(c.r.Context(), t)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	if old == nil {
		if old, err = t.scheme.New(t.external); err != nil {
			return nil, wire.NewInternalError(err)
		}
	}
	return fm.UpdateNoErrors(old, obj, c.manager()), nil
}

// manageCustom is manageTyped for a custom resource's documents.
func (c *call) manageCustom(d, old *doc) error {
	if c.applied || c.scale || c.res.crd == "" || skipManagedFields || c.r.ContentLength > largeBody { // a Scale's: manageScale
		return nil
	}
	fm, err := c.fieldManager(c.r.Context(), nil)
	if err != nil {
		return wire.NewInternalError(err)
	}
	// d's metadata is coerced as kube's decoder of a custom resource
	// coerces it (admit, crmeta.go): an empty managedFields is gone, so
	// it leaves the live entries ([{}] resets them), unlike a built-in
	// kind's.
	obj, err := toUnstructured(d)
	if err != nil {
		return err
	}
	live := &unstructured.Unstructured{Object: map[string]any{}}
	live.SetAPIVersion(c.res.apiVersion())
	live.SetKind(c.res.kind)
	if old != nil {
		if live, err = toUnstructured(old); err != nil {
			return err
		}
	}
	// Only the managed fields change: d keeps its own encoding of the
	// rest (1.0 stays 1.0, which kube's strategy tells from 1).
	out, err := meta.Accessor(fm.UpdateNoErrors(live, obj, c.manager()))
	if err != nil {
		return wire.NewInternalError(err)
	}
	return setManagedFields(d, out.GetManagedFields())
}

// setManagedFields makes entries d's managedFields (none when empty).
func setManagedFields(d *doc, entries []metav1.ManagedFieldsEntry) error {
	if len(entries) == 0 {
		delete(d.meta, "managedFields")
		return nil
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return wire.NewInternalError(err)
	}
	d.meta["managedFields"] = b
	return nil
}

// setDoc replaces d's fields with obj's.
func setDoc(d *doc, obj runtime.Object) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return wire.NewInternalError(err)
	}
	out, err := decodeDoc(b)
	if err != nil {
		return err
	}
	d.apiVersion, d.kind, d.meta, d.rest = out.apiVersion, out.kind, out.meta, out.rest
	return nil
}

// applyPatch applies a server-side apply patch to cur (nil: the object
// does not exist yet) as kube's applyPatcher does, returning the object
// to write.
func (c *call) applyPatch(opts *metav1.PatchOptions, body []byte, cur *doc) (*doc, error) {
	t := c.res.typed()
	fm, err := c.fieldManager(c.r.Context(), t)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	obj, patchObj, err := c.runApply(fm, opts, body, func() (runtime.Object, error) {
		switch {
		case t != nil && cur == nil:
			return t.scheme.New(t.external)
		case t != nil:
			live, err := t.decodeStored(cur)
			if err != nil {
				return nil, wire.NewInternalError(err)
			}
			return live, nil
		case cur == nil:
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetAPIVersion(c.res.apiVersion())
			u.SetKind(c.res.kind)
			return u, nil
		default:
			return toUnstructured(cur)
		}
	})
	if err != nil {
		return nil, err
	}
	next := &doc{meta: map[string]json.RawMessage{}}
	if t != nil {
		if err := t.encodeInto(obj, next); err != nil {
			return nil, err
		}
		next.apiVersion, next.kind = c.res.apiVersion(), c.res.kind
	} else if err := setDoc(next, obj); err != nil {
		return nil, err
	}
	// The resourceVersion the configuration names, even "", is the
	// applied object's, as kube merges it into the live one's (which an
	// empty one then leaves without: an unconditional update, refused
	// where the strategy needs one); the typed encoding drops an empty one.
	if md, ok := patchObj.Object["metadata"].(map[string]any); ok {
		if rv, ok := md["resourceVersion"].(string); ok {
			next.setMeta("resourceVersion", rv)
		}
	}
	return next, nil
}

// runApply is kube's applyPatcher: the configuration in body applied by
// fm to the live object (made by live, once the body has decoded), with
// kube's answers to what fails, then the body's strict check as the
// request's fieldValidation asks. It returns the applied object and the
// configuration.
func (c *call) runApply(fm *managedfields.FieldManager, opts *metav1.PatchOptions, body []byte,
	live func() (runtime.Object, error)) (runtime.Object, *unstructured.Unstructured, error) {
	patchObj := &unstructured.Unstructured{Object: map[string]any{}}
	if err := sigsyaml.Unmarshal(body, &patchObj.Object); err != nil {
		return nil, nil, wire.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	liveObj, err := live()
	if err != nil {
		return nil, nil, err
	}
	force := opts.Force != nil && *opts.Force
	obj, err := fm.Apply(liveObj, patchObj, opts.FieldManager, force)
	if err != nil {
		var api apierrors.APIStatus
		if errors.As(err, &api) {
			return nil, nil, kubeStatus(err)
		}
		return nil, nil, plainError(err)
	}
	if v := c.fieldValidation(); v == fieldValidationStrict || v == fieldValidationWarn {
		if err := sigsyaml.UnmarshalStrict(body, &map[string]any{}); err != nil {
			if v == fieldValidationStrict {
				return nil, nil, wire.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
			}
			c.warnStrict(strictErrors{err.Error()})
		}
	}
	return obj, patchObj, nil
}

// applyBody is kube's check of an apply patch before anything else: YAML
// that converts to JSON.
func applyBody(body []byte) error {
	b, err := yaml.ToJSON(body)
	if err != nil {
		return wire.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
	}
	return checkDepth(b)
}

// authorizeCreate is kube's second authorization of an apply that creates
// the object: the user must be allowed to create it, not only to patch.
func (c *call) authorizeCreate() error {
	if c.s.authz == nil {
		return nil
	}
	u, create, d, reason, err := c.authorizeAs("create")
	switch {
	case create == nil:
		return err
	case d == auth.DecisionAllow:
		return nil
	case err != nil:
		return wire.NewInternalError(err)
	}
	return filters.Forbidden(u, create, reason)
}

// authorizeAs asks the authorizer whether the request's user may do what
// the request does with verb instead: the user, the attributes asked
// about (nil, with an error, without request info) and the answer.
func (c *call) authorizeAs(verb string) (*request.User, *request.Info, auth.Decision, string, error) {
	ctx := c.r.Context()
	info, ok := request.InfoFrom(ctx)
	if !ok {
		return nil, nil, 0, "", wire.NewInternalError(errors.New("no request info"))
	}
	as := *info
	as.Verb = verb
	u, _ := request.UserFrom(ctx)
	d, reason, err := c.s.authz.Authorize(ctx, u, &as)
	return u, &as, d, reason, err
}
