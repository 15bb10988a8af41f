package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/server/internal/handlers"
	"github.com/listwatch/listwatch/wire"
)

// Patch content types kube accepts.
const (
	contentMergePatch     = "application/merge-patch+json"
	contentJSONPatch      = "application/json-patch+json"
	contentStrategicPatch = "application/strategic-merge-patch+json"
	contentApplyPatch     = "application/apply-patch+yaml"
)

// Patches are applied with the libraries kube-apiserver's patch handler
// (k8s.io/apiserver/pkg/endpoints/handlers/patch.go) uses: evanphx's
// json-patch v4 for JSON and merge patches, apimachinery's strategicpatch
// with the served Go type's patch metadata for strategic merge patches.

// maxJSONPatchOperations is kube's limit on the operations of one JSON patch.
const maxJSONPatchOperations = 10000

// jsonPatchMaxCopyBytes is kube-apiserver's default bound on what the copy
// operations of one JSON patch may duplicate (its JSONPatchMaxCopyBytes).
const jsonPatchMaxCopyBytes = 3 * 1024 * 1024

func init() {
	if jsonpatch.AccumulatedCopySizeLimit == 0 || jsonpatch.AccumulatedCopySizeLimit > jsonPatchMaxCopyBytes {
		jsonpatch.AccumulatedCopySizeLimit = jsonPatchMaxCopyBytes
	}
}

// patchTypes are the patch content types r accepts, in kube's order:
// custom resources take no strategic merge patch.
func (r *resource) patchTypes() []string {
	if r.typed() == nil {
		return []string{contentJSONPatch, contentMergePatch, contentApplyPatch}
	}
	return []string{contentJSONPatch, contentMergePatch, contentStrategicPatch, contentApplyPatch}
}

// unsupportedPatch is kube's 415 for a patch type r does not take: for
// a built-in resource, its router's answer; for a custom resource, its
// handler's, which lists the accepted types.
func (r *resource) unsupportedPatch() error {
	if r.typed() != nil {
		return &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
			Code: http.StatusUnsupportedMediaType, Reason: wire.ReasonUnsupportedMediaType,
			Message: "415: Unsupported Media Type", Details: &wire.StatusDetails{}}
	}
	return &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
		Code: http.StatusUnsupportedMediaType, Reason: wire.ReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(r.patchTypes(), ", ")}
}

// plainError is how kube answers an error that is not an API status (a
// library's): 500, its text, no reason.
func plainError(err error) error {
	return &wire.Status{TypeMeta: wire.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: wire.StatusFailure,
		Code: http.StatusInternalServerError, Message: err.Error()}
}

// patchContentType is the request's patch type, kube's way: the
// Content-Type without parameters, which must be one r accepts.
func (c *call) patchContentType() (string, error) {
	ct := c.r.Header.Get("Content-Type")
	if i := strings.Index(ct, ";"); i > 0 {
		ct = ct[:i]
	}
	if !slices.Contains(c.res.patchTypes(), ct) {
		return "", c.res.unsupportedPatch()
	}
	return ct, nil
}

// patch answers PATCH on an object: JSON, merge and (for built-ins)
// strategic merge patches, applied to the current object in a
// read-patch-write loop that retries when another writer got in between.
// A resourceVersion the patch sets is a precondition (409 if stale).
func (c *call) patch() error {
	if c.scale {
		return c.patchScale()
	}
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
		return c.apply(opts, body)
	}
	if !json.Valid(body) {
		return wire.NewBadRequest("invalid JSON patch")
	}
	stored, err := c.s.guaranteedUpdate(c.r.Context(), c, 0, func(cur *doc) (*doc, error) {
		return c.patchOnce(ct, body, cur)
	})
	if err != nil {
		return err
	}
	return c.writeObject(http.StatusOK, stored)
}

// patchOnce applies a JSON, merge or strategic merge patch (ct) to the
// stored object cur, as one attempt of the read-patch-write loop.
func (c *call) patchOnce(ct string, body []byte, cur *doc) (*doc, error) {
	t := c.res.typed()
	var err error
	curRV := cur.metaString("resourceVersion")
	current := c.res.relabel(cur.encodeWithRV(curRV)) // as the URL's version sees it
	switch {
	case t != nil:
		// As kube encodes its Go type: fields in the type's order.
		if current, err = t.encodeVersioned(current); err != nil {
			return nil, err
		}
	case c.res.crd != "":
		// As kube encodes an unstructured object: keys in order.
		current = sortedJSON(current)
	}
	var next *doc
	if ct == contentStrategicPatch {
		next, err = c.strategicPatch(current, body)
		if err != nil {
			return nil, err
		}
	} else {
		patched, bodyErrs, err := c.applyJSONPatch(ct, current, body)
		if err != nil {
			return nil, err
		}
		if t != nil {
			// kube decodes the result into the Go type at once.
			if patched, err = c.checkPatchedTyped(t, patched, bodyErrs); err != nil {
				return nil, err
			}
			bodyErrs = nil
		} else if c.res.crd != "" {
			if err := checkPatchedCustom(patched); err != nil {
				return nil, err
			}
		}
		if next, err = decodeDoc(patched); err != nil {
			return nil, err
		}
		if err := checkDocDepth(next); err != nil {
			return nil, err
		}
		if t == nil {
			next.strict = append(bodyErrs, next.strict...)
			if err := c.checkPatched(next, patched); err != nil {
				return nil, err
			}
		} else {
			next.strict = nil
		}
	}
	// The patched object's resourceVersion (the stored one, unless the
	// patch changed it) is read as kube's store reads an update's, once
	// mutating admission has run (updateFrom's settle).
	return next, nil
}

// applyJSONPatch applies a JSON patch or a merge patch (ct) to current as
// kube's jsonPatcher does, returning the result and the strict decoding
// errors of the patch itself (duplicate keys, unknown operation fields)
// when fieldValidation asks for them.
func (c *call) applyJSONPatch(ct string, current, body []byte) ([]byte, strictErrors, error) {
	strict := c.fieldValidation() != fieldValidationIgnore
	var bodyErrs strictErrors
	switch ct {
	case contentJSONPatch:
		if strict {
			errs, err := handlers.StrictJSONPatchErrors(body)
			if err != nil {
				return nil, nil, wire.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
			bodyErrs = errs
		}
		p, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, nil, wire.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, nil, kubeStatus(apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p))))
		}
		patched, err := applyJSONPatchOps(p, current)
		if err != nil {
			return nil, nil, kubeStatus(apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false))
		}
		return patched, bodyErrs, nil
	case contentMergePatch:
		if strict {
			errs, err := kjson.UnmarshalStrict(body, &map[string]any{})
			if err != nil {
				return nil, nil, wire.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
			for _, e := range errs {
				bodyErrs = append(bodyErrs, e.Error())
			}
		}
		patched, err := jsonpatch.MergePatch(current, body)
		if errors.Is(err, jsonpatch.ErrBadJSONPatch) {
			return nil, nil, wire.NewBadRequest(err.Error())
		}
		if err != nil {
			return nil, nil, plainError(err)
		}
		return patched, bodyErrs, nil
	}
	return nil, nil, plainError(fmt.Errorf("unknown Content-Type header for patch: %v", ct))
}

// applyJSONPatchOps applies p; a panic of the library (which kube's
// handler would turn into a 500) is an error here too.
func applyJSONPatchOps(p jsonpatch.Patch, current []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return p.Apply(current)
}

// strategicPatch applies a strategic merge patch to current, a built-in
// object, as kube's smpPatcher does: on the served version's Go type, with
// its patch strategies, then decoded (unknown fields per fieldValidation)
// and defaulted.
func (c *call) strategicPatch(current, body []byte) (*doc, error) {
	t := c.res.typed()
	versioned, err := t.scheme.New(t.external)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	if _, _, err := laxDecoders[t.scheme].Decode(current, nil, versioned); err != nil {
		return nil, wire.NewInternalError(err)
	}
	original, err := runtime.DefaultUnstructuredConverter.ToUnstructured(versioned)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	strict := c.fieldValidation() != fieldValidationIgnore
	patchMap := map[string]any{}
	var strictErrs []error
	if strict {
		if strictErrs, err = kjson.UnmarshalStrict(body, &patchMap); err != nil {
			return nil, wire.NewBadRequest(err.Error())
		}
	} else if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &patchMap); err != nil {
		return nil, wire.NewBadRequest(err.Error())
	}
	schemaRef, err := t.scheme.New(t.external)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	patched, err := strategicMergeMapPatch(original, patchMap, schemaRef)
	if err != nil {
		return nil, strategicPatchError(err)
	}
	out, err := t.scheme.New(t.external)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	patchInvalid := func(msg string) error {
		return kubeStatus(apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), fmt.Sprintf("%+v", patchMap), msg)}))
	}
	err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, out, strict)
	strictErr, isStrict := runtime.AsStrictDecodingError(err)
	switch {
	case err != nil && !isStrict:
		return nil, patchInvalid(err.Error())
	case isStrict:
		strictErrs = append(strictErrs, strictErr.Errors()...)
	}
	if len(strictErrs) > 0 {
		if c.fieldValidation() == fieldValidationStrict {
			return nil, patchInvalid(runtime.NewStrictDecodingError(strictErrs).Error())
		}
		var warn strictErrors
		for _, e := range strictErrs {
			warn = append(warn, e.Error())
		}
		c.warnStrict(warn)
	}
	// kube converts the typed result to its internal type, which has no
	// apiVersion or kind: a strategic patch that changes or removes them
	// changes nothing.
	out.GetObjectKind().SetGroupVersionKind(t.external)
	t.scheme.Default(out)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	d, err := decodeDoc(b)
	if err != nil {
		return nil, err
	}
	// kube hands the patched object itself to its field manager, where
	// an empty (not absent) managedFields resets them; the encoding
	// above omits it, so it is put back for the field manager to see.
	if m, err := meta.Accessor(out); err == nil && m.GetManagedFields() != nil && len(m.GetManagedFields()) == 0 {
		d.meta["managedFields"] = json.RawMessage("[]")
	}
	return d, checkDocDepth(d)
}

// strategicMergeMapPatch is strategicpatch.StrategicMergeMapPatch; a
// panic of the library (kube's handler would answer 500) is an error.
func strategicMergeMapPatch(original, patch map[string]any, ref runtime.Object) (out map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return strategicpatch.StrategicMergeMapPatch(original, patch, ref)
}

// strategicPatchError is kube's interpretStrategicMergePatchError.
func strategicPatchError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return wire.NewBadRequest(err.Error())
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return kubeStatus(apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false))
	}
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		return kubeStatus(err)
	}
	return plainError(err)
}

// encodeVersioned re-encodes a stored object of t as kube encodes its Go
// type (the order of fields is the type's, which shows in kube's
// messages that quote a patched object).
func (t *typedKind) encodeVersioned(current []byte) ([]byte, error) {
	obj, err := t.scheme.New(t.external)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	if _, _, err := laxDecoders[t.scheme].Decode(current, nil, obj); err != nil {
		return nil, wire.NewInternalError(err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	return b, nil
}

// checkPatchedTyped decodes the result of a JSON or merge patch of a
// built-in object into its internal type, as kube's jsonPatcher does: a result
// that does not decode is 422 Invalid "patch"; unknown and duplicate
// fields, with the patch's own (bodyErrs) first, follow fieldValidation.
// It returns the object kube goes on with, encoded: patched itself, or,
// when patched has no apiVersion, what kube's decoder made of it: the
// version it then defaults to is the internal one, whose Go type has no
// "metadata" or "spec" (every member but kind is unknown to it, and the
// name the object needs is gone).
func (c *call) checkPatchedTyped(t *typedKind, patched []byte, bodyErrs strictErrors) ([]byte, error) {
	into, err := t.scheme.New(t.internal)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	dec := strictDecoders[t.scheme]
	if c.fieldValidation() == fieldValidationIgnore {
		dec = laxDecoders[t.scheme]
	}
	// To the internal version, as kube's patcher decodes: a result of
	// another kind fails its conversion.
	_, gvk, err := codecsOf(t.scheme).DecoderToVersion(dec, t.internal.GroupVersion()).Decode(patched, nil, into)
	errs := bodyErrs
	if strictErr, ok := runtime.AsStrictDecodingError(err); ok {
		for _, e := range strictErr.Errors() {
			errs = append(errs, e.Error())
		}
	} else if err != nil {
		return nil, kubeStatus(apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), string(patched), err.Error())}))
	}
	if err := c.checkPatched(&doc{strict: errs}, patched); err != nil {
		return nil, err
	}
	if gvk == nil || gvk.Version != runtime.APIVersionInternal {
		return patched, nil
	}
	out, err := t.scheme.New(t.external)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	if err := t.scheme.Convert(into, out, nil); err != nil {
		return nil, wire.NewInternalError(err)
	}
	out.GetObjectKind().SetGroupVersionKind(t.external)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	return b, nil
}

// sortedJSON re-encodes the JSON value b with every object's members in
// key order, as encoding/json encodes a map; numbers keep their text. b
// is returned as it is if it does not decode.
func sortedJSON(b []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// checkPatchedCustom decodes the result of a JSON or merge patch of a
// custom resource as kube's jsonPatcher does, with the unstructured
// decoder: one whose apiVersion or kind is not a string, or that has no
// kind, is 422 Invalid "patch". (One without apiVersion decodes; kube's
// store then cannot type it: missingAPIVersion.)
func checkPatchedCustom(patched []byte) error {
	if _, _, err := crDecoder.Decode(patched, nil, &unstructured.Unstructured{}); err != nil {
		return kubeStatus(apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), string(patched), err.Error())}))
	}
	return nil
}

// missingAPIVersion is kube's answer to a write of a custom resource that
// has no apiVersion, which only a patch makes: its store cannot type the
// object (BeforeUpdate), a 500.
func missingAPIVersion() error {
	return kubeStatus(apierrors.NewInternalError(runtime.NewMissingVersionErr("object has no apiVersion field")))
}

// apply answers a server-side apply patch: the apply to the stored
// object, or, when there is none, the creation of what the patch applies
// to nothing (201), as kube's patch handler does (forceAllowCreate).
func (c *call) apply(opts *metav1.PatchOptions, body []byte) error {
	c.applied = true
	ctx := c.r.Context()
	for attempt := 0; ; attempt++ {
		stored, err := c.s.guaranteedUpdate(ctx, c, 0, func(cur *doc) (*doc, error) {
			next, err := c.applyPatch(opts, body, cur)
			if err != nil {
				return nil, err
			}
			// The applied object's resourceVersion, which kube's store reads
			// as an update's (updateFrom's settle): the configuration's, if
			// it names one (a stale one is a 409, as for any patch), else
			// the stored one (which the merge of a custom resource leaves
			// out).
			if _, named := next.meta["resourceVersion"]; !named {
				next.setMeta("resourceVersion", cur.metaString("resourceVersion"))
			}
			return next, nil
		})
		var st *wire.Status
		if !errors.As(err, &st) || st.Code != http.StatusNotFound || st.Details == nil || st.Details.Name != c.name || attempt >= 16 {
			if err != nil {
				return err
			}
			return c.writeObject(http.StatusOK, stored)
		}
		d, err := c.applyPatch(opts, body, nil)
		if err != nil {
			return err
		}
		if err := c.checkType(d); err != nil {
			return err
		}
		if err := c.checkName(d); err != nil {
			return err
		}
		// As an update's, the resourceVersion is parsed, then ignored.
		if _, err := updateRevision(d.metaString("resourceVersion")); err != nil {
			return err
		}
		if err := c.authorizeCreate(); err != nil {
			return err
		}
		value, err := c.createDoc(d)
		if errors.As(err, &st) && st.Reason == wire.ReasonAlreadyExists {
			continue // created meanwhile: apply to it
		}
		if err != nil {
			return err
		}
		return c.writeObject(http.StatusCreated, value)
	}
}
