package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	sigsjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// admit runs what kube-apiserver runs over a write d between decoding it
// and storing it (old: the stored object, nil on create), in kube's order.
// First what kube's handler does to the object as the client sent it (on
// an update, as kube's UpdatedObject builds it): the managed fields, then
// mutating admission. Its webhooks and policies therefore see a create
// without uid, creationTimestamp or generated name, and an update with the
// resourceVersion the client sent and, on /status, with the metadata and
// spec the client sent. Then, on an update, settle gets the mutated
// object's resourceVersion, which kube's store checks only now (a 422
// where the strategy needs one, a 409 when stale). Then the store's part:
// the server-owned metadata (prepareCreate, prepareUpdate), the strategy
// with its validation (BeforeCreate, BeforeUpdate), and validating
// admission. A built-in kind goes through kube-apiserver's own pipeline
// (admitTyped); a custom resource gets our metadata rules here
// (validateMeta) and its strategy in admitCustom.
func (c *call) admit(d, old *doc, settle func(rv string) error) error {
	t := c.res.typed()
	if t == nil {
		if snap, ok := c.mutated.(*doc); ok && old == nil {
			// A create tried again under another name (create.go).
			*d = *snap.clone()
			c.prepareCreate(d)
			return c.validateMeta(d)
		}
		if old == nil && c.r.Method == http.MethodPost {
			// kube's create handler wipes them before admission.
			for _, k := range systemMetaFields {
				delete(d.meta, k)
			}
		}
		if c.res.crd != "" {
			// As kube's decoder of a custom resource coerces its
			// metadata (crmeta.go), before the managed fields and
			// admission see it.
			coerceCustomMeta(d)
		}
		// Both rebuild d from its stored form, which has no
		// resourceVersion: the one sent is kept for settle.
		rv, hasRV := d.meta["resourceVersion"]
		if c.res.schema != nil {
			// As kube decodes a custom resource: pruned and defaulted.
			if err := c.schemaCoerce(d, true); err != nil {
				return err
			}
		}
		// managedFields (ssa.go), computed in kube's handler before
		// admission: what mutation adds is not the client's.
		if err := c.manageCustom(d, old); err != nil {
			return err
		}
		if hasRV {
			d.meta["resourceVersion"] = rv
		}
		if err := c.namespaceLifecycle(); err != nil {
			return err
		}
		if err := c.mutateCustom(d, old); err != nil {
			return err
		}
		if old == nil {
			c.createRV = d.meta["resourceVersion"]
			if c.r.Method == http.MethodPost && d.metaString("name") == "" && d.metaString("generateName") != "" {
				c.mutated = d.clone()
			}
			c.prepareCreate(d)
			return c.validateMeta(d)
		}
		if err := settle(d.metaString("resourceVersion")); err != nil {
			return err
		}
		if d.apiVersion == "" {
			return missingAPIVersion() // patch.go
		}
		if err := c.checkDeletionUpdate(d, old); err != nil {
			return err
		}
		if err := c.prepareUpdate(d, old); err != nil {
			return err
		}
		return c.validateMeta(d)
	}
	// A CRD's names and conditions are written after it, as kube's
	// controllers write them (crdcontrollers.go).
	return c.admitTyped(t, d, old, settle)
}

// systemMetaFields are the metadata kube's create handler wipes from the
// object sent (rest.WipeObjectMetaSystemFields).
var systemMetaFields = []string{"creationTimestamp", "uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}

// admitTyped does to d what kube-apiserver does to a write of a built-in
// kind: decode it into the versioned type (fieldValidation deciding about
// unknown and duplicate fields), apply the scheme's defaults, convert it
// to the internal type, record the managed fields, run mutating
// admission, then (on an update, after settle) run rest.BeforeCreate or
// rest.BeforeUpdate with the kind's strategy (the status strategy on
// /status) and validating admission, and convert back. d then holds the
// typed object re-encoded, so unknown fields are gone.
func (c *call) admitTyped(t *typedKind, d, old *doc, settle func(rv string) error) (retErr error) {
	if t.strategy == nil {
		// A read-only kind (componentstatuses): its routes refuse writes
		// with this Status before they get here.
		verb := "update"
		if old == nil {
			verb = "create"
		}
		return wire.NewMethodNotSupported(c.res.gr(), verb)
	}
	// An update's allocation ends here, as in kube's store (before the
	// write); a create's when it is stored (createDoc).
	defer func() {
		if retErr != nil || old != nil {
			c.finishAllocation(retErr == nil)
		}
	}()
	obj, oldObj, err := c.mutatedTyped(t, d, old)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return wire.NewInternalError(err)
	}
	ctx := c.strategyContext(old == nil)
	if old == nil {
		c.createRV = nil
		if rv := m.GetResourceVersion(); rv != "" {
			c.createRV, _ = json.Marshal(rv)
		}
		if c.mutated == nil && c.r.Method == http.MethodPost && m.GetName() == "" && m.GetGenerateName() != "" {
			c.mutated = obj.DeepCopyObject()
		}
		c.prepareCreateMeta(m)
		if err = c.checkEscalation(ctx, obj, nil); err != nil {
			return err
		}
		if err = c.beginAllocation(ctx, obj, nil); err != nil {
			return err
		}
		err = rest.BeforeCreate(t.strategy, ctx, obj)
	} else {
		if err := settle(m.GetResourceVersion()); err != nil {
			return err
		}
		// The write is at the stored revision, as kube's store sets it
		// before BeforeUpdate.
		rv := old.metaString("resourceVersion")
		m.SetResourceVersion(rv)
		if err = c.checkEscalation(ctx, obj, oldObj); err != nil {
			return err
		}
		if err = c.beginAllocation(ctx, obj, oldObj); err != nil {
			return err
		}
		err = rest.BeforeUpdate(c.updateStrategy(t), ctx, obj, oldObj)
	}
	if err != nil {
		return kubeStatus(err)
	}
	// kube's validating admission: after the strategy's validation.
	if err := c.validateTyped(t, obj, oldObj); err != nil {
		return err
	}
	return t.encodeInto(obj, d)
}

// mutatedTyped decodes d, a write of a built-in kind, and runs what
// kube's handler runs before its store: defaults, managedFields and
// mutating admission. A create tried again under another name starts
// from its first attempt's result instead (c.mutated). old, the stored
// object, is decoded too.
func (c *call) mutatedTyped(t *typedKind, d, old *doc) (obj, oldObj runtime.Object, err error) {
	if snap, ok := c.mutated.(runtime.Object); ok && old == nil {
		return snap.DeepCopyObject(), nil, nil
	}
	if obj, err = c.decodeTyped(t, d); err != nil {
		return nil, nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, wire.NewInternalError(err)
	}
	// kube's decode keeps the resourceVersion sent (d.encode leaves it
	// out), and admission sees it.
	m.SetResourceVersion(d.metaString("resourceVersion"))
	if old == nil && c.r.Method == http.MethodPost {
		// kube's create handler wipes them before admission (a create
		// by update or apply has them wiped by kube's store, after).
		rest.WipeObjectMetaSystemFields(m)
	}
	if old != nil {
		if oldObj, err = t.decodeStored(old); err != nil {
			return nil, nil, wire.NewInternalError(err)
		}
		if om, merr := meta.Accessor(oldObj); merr == nil {
			om.SetResourceVersion(old.metaString("resourceVersion"))
		}
	}
	// managedFields (ssa.go), computed in kube's handler before admission.
	if obj, err = c.manageTyped(t, obj, oldObj); err != nil {
		return nil, nil, err
	}
	// kube's mutating admission: after decoding and defaulting, before the
	// store's own steps (webhook.go), NamespaceLifecycle first.
	if err := c.namespaceLifecycle(); err != nil {
		return nil, nil, err
	}
	if err := c.mutateTyped(t, obj, oldObj); err != nil {
		return nil, nil, err
	}
	return obj, oldObj, nil
}

// updateStrategy is the strategy of t that updates the object on the
// call's path: the status, finalize or other subresource's, or the kind's.
func (c *call) updateStrategy(t *typedKind) rest.RESTUpdateStrategy {
	switch {
	case c.status && t.status != nil:
		return t.status
	case c.finalize && t.finalize != nil:
		return t.finalize
	case c.sub != "" && t.subs[c.sub] != nil:
		return t.subs[c.sub]
	}
	return t.strategy
}

// strategyContext is the request context kube's strategies read: the
// namespace, the request's resource, and where warnings go.
func (c *call) strategyContext(create bool) context.Context {
	info := &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "update",
		APIGroup: c.res.group, APIVersion: c.res.version, Resource: c.res.plural,
		Namespace: c.ns, Name: c.name,
	}
	switch {
	case create:
		info.Verb = "create"
	case c.r.Method == http.MethodPatch:
		info.Verb = "patch"
	}
	switch {
	case c.status:
		info.Subresource = "status"
	case c.finalize:
		info.Subresource = "finalize"
	case c.scale:
		info.Subresource = "scale"
	case c.sub != "":
		info.Subresource = c.sub
	}
	ctx := genericapirequest.WithNamespace(withServer(c.r.Context(), c.s), c.ns)
	if u, ok := request.UserFrom(c.r.Context()); ok {
		ctx = genericapirequest.WithUser(ctx, auth.UserToKube(u))
	}
	ctx = genericapirequest.WithRequestInfo(ctx, info)
	return warning.WithWarningRecorder(ctx, warnRecorder{c})
}

// Decoders of each scheme: strict reports unknown and duplicate fields,
// lax drops them silently, both as kube's JSON serializer does.
var (
	strictDecoders = map[*runtime.Scheme]*kjson.Serializer{}
	laxDecoders    = map[*runtime.Scheme]*kjson.Serializer{}
)

func init() {
	for _, t := range typedKinds {
		for _, strict := range []bool{true, false} {
			s := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, t.scheme, t.scheme, kjson.SerializerOptions{Strict: strict})
			if strict {
				strictDecoders[t.scheme] = s
			} else {
				laxDecoders[t.scheme] = s
			}
		}
	}
}

// decodeTyped decodes a request's object into t's internal type. A value
// of the wrong type is kube's 400; unknown and duplicate fields follow the
// request's fieldValidation, as for metadata (checkDecoded, checkPatched).
func (c *call) decodeTyped(t *typedKind, d *doc) (runtime.Object, error) {
	if obj := d.takeBody(t); obj != nil { // bodyview.go
		return t.internalOf(obj)
	}
	b := d.encode()
	into, err := t.scheme.New(t.external)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	_, err = decodeJSONInto(t, d, b, into, c.fieldValidation() != fieldValidationIgnore)
	if strictErr, ok := runtime.AsStrictDecodingError(err); ok {
		found := &doc{}
		for _, e := range strictErr.Errors() {
			found.strict = append(found.strict, e.Error())
		}
		check := c.checkDecoded
		if c.r.Method == http.MethodPatch {
			check = func(d *doc) error { return c.checkPatched(d, b) }
		}
		if err := check(found); err != nil {
			return nil, err
		}
	} else if err != nil && c.r.Method == http.MethodPatch {
		// A patch whose result does not decode: kube's 422 on "patch".
		st := invalid("", "", "", "", fieldInvalid("patch", string(b), err.Error()))
		st.Details.Kind = ""
		return nil, st
	} else if err != nil {
		if c.body != nil {
			// kube decodes the body as sent, whose first fault (in its
			// order of fields) is the one it reports.
			if kerr := kubeDecodeError(t, c.body, c.sent); kerr != nil {
				return nil, kerr
			}
		}
		return nil, wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
			t.external.Kind, t.external.Version, t.external.Kind, err))
	}
	return t.internalOf(into)
}

// decodeStored decodes a stored object (laxly: it was admitted already).
func (t *typedKind) decodeStored(d *doc) (runtime.Object, error) {
	into, err := t.scheme.New(t.stored())
	if err != nil {
		return nil, err
	}
	// The value is in the stored version, or in the served one when it
	// was converted for the response (convert.go): decode what it says.
	obj, err := decodeJSONInto(t, d, d.encode(), into, false)
	if err != nil {
		return nil, err
	}
	return t.internalOf(obj)
}

// decodeJSONInto decodes b, the encoding of d, into the typed object into
// as kube's JSON serializer does (its Decode, strict or not), and returns
// what that returns: the object (into, or one of b's version when b is of
// another), and a runtime.StrictDecodingError when strict and b has
// unknown or duplicate fields. When d is of into's kind and version, as a
// body checkType passed is, it skips the serializer's first pass, which
// only reads the apiVersion and kind d already holds (unless d has another
// member of either name in another case, see foldsTypeKey).
func decodeJSONInto(t *typedKind, d *doc, b []byte, into runtime.Object, strict bool) (runtime.Object, error) {
	kinds, _, err := t.scheme.ObjectKinds(into)
	if err != nil || len(kinds) != 1 || d.kind != kinds[0].Kind || d.apiVersion != kinds[0].GroupVersion().String() || foldsTypeKey(d) {
		dec := laxDecoders[t.scheme]
		if strict {
			dec = strictDecoders[t.scheme]
		}
		obj, _, err := dec.Decode(b, nil, into)
		return obj, err
	}
	if !strict {
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, into); err != nil {
			return nil, err
		}
		return into, nil
	}
	strictErrs, err := sigsjson.UnmarshalStrict(b, into)
	if err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return into, runtime.NewStrictDecodingError(strictErrs)
	}
	return into, nil
}

// foldsTypeKey reports whether d has a member other than apiVersion and
// kind whose name matches one of theirs without regard to case: the
// serializer's first pass reads it (encoding/json matches names so, the
// last one winning), and may then decode another kind or version.
func foldsTypeKey(d *doc) bool {
	for k := range d.rest {
		if strings.EqualFold(k, "apiVersion") || strings.EqualFold(k, "kind") {
			return true
		}
	}
	return false
}

// internalOf defaults a versioned object and converts it to the internal
// type, as kube's decoding codec does.
func (t *typedKind) internalOf(external runtime.Object) (runtime.Object, error) {
	t.scheme.Default(external)
	internal, err := t.scheme.New(t.internal)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	if err := t.scheme.Convert(external, internal, nil); err != nil {
		return nil, wire.NewInternalError(err)
	}
	return internal, nil
}

// encodeInto converts an internal object back to the stored version (the
// served one but for convert.go's kinds), defaults it, and replaces d's
// fields with its JSON encoding.
//
// The defaulting is kube's read: kube-apiserver decodes every object it
// reads from etcd, a write's own response included, through its codec,
// which runs the kind's defaulting functions again. Defaults that read
// what the strategy or admission set after the request was defaulted
// show only then: a Job's labels, copied from the template labels its
// strategy generated; a PersistentVolumeClaim's phase Pending, after its
// strategy reset the status. serve sends stored values as they are, so it
// stores each object as kube would read it back, and its responses,
// GETs, lists, watches and selectors all see the defaulted object.
func (t *typedKind) encodeInto(internal runtime.Object, d *doc) error {
	if t.converts() {
		d.apiVersion, d.kind = t.storage.GroupVersion().String(), t.storage.Kind
	}
	external, err := t.scheme.New(t.stored())
	if err != nil {
		return wire.NewInternalError(err)
	}
	if err := t.scheme.Convert(internal, external, nil); err != nil {
		return wire.NewInternalError(err)
	}
	t.scheme.Default(external)
	b, err := json.Marshal(external)
	if err != nil {
		return wire.NewInternalError(err)
	}
	return d.splitTyped(t, external, b) // typedview.go
}

// kubeStatus turns an error of kube's libraries into our Status with the
// same code, reason, message and causes.
func kubeStatus(err error) error {
	var api apierrors.APIStatus
	if !errors.As(err, &api) {
		return wire.NewInternalError(err)
	}
	b, merr := json.Marshal(api.Status())
	if merr != nil {
		return wire.NewInternalError(err)
	}
	var st wire.Status
	if uerr := json.Unmarshal(b, &st); uerr != nil {
		return wire.NewInternalError(err)
	}
	st.Kind, st.APIVersion = "Status", "v1"
	return &st
}

// warnRecorder gives the strategies' warnings to the response, as kube's
// Warning headers.
type warnRecorder struct{ c *call }

func (w warnRecorder) AddWarning(_, text string) {
	if w.c.w != nil {
		w.c.warnStrict(strictErrors{text})
	}
}

// internalRequest stands for the request of a write the server makes
// itself (the default namespaces), for what admit reads of one.
func internalRequest(ctx context.Context, method string) *http.Request {
	return (&http.Request{Method: method, URL: &url.URL{}, Header: http.Header{}}).WithContext(ctx)
}
