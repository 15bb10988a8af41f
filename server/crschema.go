package server

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/registry/rest"
	sigsjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/wire"
)

// A CRD version's schema is served as kube-apiserver serves it: the
// objects written are pruned of unknown fields, null values the schema
// does not allow are dropped and defaults are applied, as kube's decoder
// does (its unstructuredSchemaCoercer and unstructuredDefaulter), and then
// kube's own customresource strategy, built with the version's schema
// validator, status validator and structural schema, validates them:
// OpenAPI types, formats, enums, bounds, patterns, lengths, required,
// nullable, int-or-string, embedded resources, list types and map keys,
// and the x-kubernetes-validations CEL rules within kube's cost limits.

// crSchema is what one served version of a CRD needs for its objects:
// the structural schema (also what server-side apply's type converter is
// built from) and kube's strategies built over it.
type crSchema struct {
	// structural is the version's structural schema, defaults pruned as
	// kube's handler prunes them.
	structural *structuralschema.Structural
	// preserveUnknownFields: spec.preserveUnknownFields; nothing is
	// pruned.
	preserveUnknownFields bool
	// strategy and statusStrategy are kube's customresource strategies for
	// writes to the resource and to its status subresource.
	strategy       crValidator
	statusStrategy crUpdateValidator
	// table is kube's Table convertor of the version's printer columns.
	table rest.TableConvertor
	// coerceReads: reading a stored object may change it (readsCoerce).
	coerceReads bool
	// unchanged remembers stored objects that reading does not change.
	unchanged readCache
}

// readCache is a bounded set of stored values (by two independent 64-bit
// hashes and the length) that this schema reads back unchanged, so that
// reading an object again costs a hash, not a decode. It is part of the
// crSchema, so a change of the CRD starts a new one.
type readCache struct {
	mu     sync.Mutex
	seeds  [2]maphash.Seed
	seeded bool
	seen   map[readKey]struct{}
}

type readKey struct {
	h1, h2 uint64
	n      int
}

// readCacheMax bounds the set; it is emptied when full.
const readCacheMax = 1 << 16

func (rc *readCache) key(v []byte) readKey {
	rc.mu.Lock()
	if !rc.seeded {
		rc.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
		rc.seeded = true
	}
	s := rc.seeds
	rc.mu.Unlock()
	return readKey{maphash.Bytes(s[0], v), maphash.Bytes(s[1], v), len(v)}
}

func (rc *readCache) has(k readKey) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	_, ok := rc.seen[k]
	return ok
}

func (rc *readCache) add(k readKey) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.seen == nil || len(rc.seen) >= readCacheMax {
		rc.seen = map[readKey]struct{}{}
	}
	rc.seen[k] = struct{}{}
}

// crValidator is the part of kube's customresource strategy that
// validates.
type crValidator interface {
	crPreparer
	rest.RESTUpdateStrategy
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	WarningsOnCreate(ctx context.Context, obj runtime.Object) []string
	WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string
}

type crUpdateValidator interface {
	rest.RESTUpdateStrategy
}

// crdDefinition decodes a stored CRD as kube's typed v1 object.
func crdDefinition(d *doc) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(d.encode(), crd); err != nil {
		return nil, err
	}
	return crd, nil
}

// newCRSchema builds what serves the objects of version v of crd, as
// kube's CRD handler does when it starts serving a CRD. A version without
// a schema gets none (nil, nil).
func newCRSchema(crd *apiextensionsv1.CustomResourceDefinition, v string, kind string, namespaced bool, status bool, scale *crScale) (*crSchema, error) {
	internal, s, err := crInternalSchema(crd, v)
	if err != nil || s == nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	var st *apiextensionsinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if status {
		st = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		if p := internal.OpenAPIV3Schema.Properties; p != nil {
			if ss, ok := p["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&ss); err != nil {
					return nil, err
				}
			}
		}
	}
	var sc *apiextensionsinternal.CustomResourceSubresourceScale
	if scale != nil {
		sc = &apiextensionsinternal.CustomResourceSubresourceScale{
			SpecReplicasPath: scale.SpecReplicasPath, StatusReplicasPath: scale.StatusReplicasPath,
			LabelSelectorPath: scale.LabelSelectorPath,
		}
	}
	var selectable []apiextensionsv1.SelectableField
	var columns []apiextensionsv1.CustomResourceColumnDefinition
	for _, ver := range crd.Spec.Versions {
		if ver.Name == v {
			selectable = ver.SelectableFields
			columns = ver.AdditionalPrinterColumns
		}
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v, Kind: kind}
	strategy := customresource.NewStrategy(nil, namespaced, gvk, validator, statusValidator, s, st, sc, selectable)
	if len(columns) == 0 {
		columns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date",
			Description: ageDescription, JSONPath: ".metadata.creationTimestamp"}}
	}
	table, err := tableconvertor.New(columns)
	if err != nil {
		return nil, err
	}
	return &crSchema{
		structural: s, preserveUnknownFields: crd.Spec.PreserveUnknownFields,
		strategy: strategy, statusStrategy: customresource.NewStatusStrategy(strategy), table: table,
		coerceReads: !crd.Spec.PreserveUnknownFields && readsCoerce(s),
	}, nil
}

// crStructural is the structural schema of version v of crd (nil if it
// has none), its defaults pruned as kube's handler prunes them.
func crStructural(crd *apiextensionsv1.CustomResourceDefinition, v string) (*structuralschema.Structural, error) {
	_, s, err := crInternalSchema(crd, v)
	return s, err
}

// crInternalSchema is the validation schema of version v of crd in
// apiextensions' internal version and its structural schema (nil, nil if
// it has none), defaults pruned unless the CRD preserves unknown fields.
func crInternalSchema(crd *apiextensionsv1.CustomResourceDefinition, v string) (*apiextensionsinternal.CustomResourceValidation, *structuralschema.Structural, error) {
	val, err := apiextensionshelpers.GetSchemaForVersion(crd, v)
	if err != nil {
		return nil, nil, err
	}
	if val == nil || val.OpenAPIV3Schema == nil {
		return nil, nil, nil
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return nil, nil, fmt.Errorf("converting the schema of %s: %w", v, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, nil, fmt.Errorf("the schema of %s is not structural: %w", v, err)
	}
	if !crd.Spec.PreserveUnknownFields {
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return nil, nil, fmt.Errorf("pruning the defaults of %s: %w", v, err)
		}
	}
	return internal, s, nil
}

// ageDescription is kube's description of a CR's default Age column.
const ageDescription = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"

// crdDeprecationWarnings maps each deprecated served version of crd to
// the warning kube gives on every request to it: the CRD's
// deprecationWarning, else kube's default text.
func crdDeprecationWarnings(crd *apiextensionsv1.CustomResourceDefinition) map[string]string {
	out := map[string]string{}
	for _, v := range crd.Spec.Versions {
		if !v.Deprecated {
			continue
		}
		if v.DeprecationWarning != nil {
			out[v.Name] = *v.DeprecationWarning
			continue
		}
		msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
		var newer []string
		for _, o := range crd.Spec.Versions {
			if o.Served && !o.Deprecated && version.CompareKubeAwareVersionStrings(v.Name, o.Name) < 0 {
				newer = append(newer, o.Name)
			}
		}
		if len(newer) > 0 {
			sort.Slice(newer, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(newer[i], newer[j]) > 0 })
			msg += fmt.Sprintf("; use %s/%s %s", crd.Spec.Group, newer[0], crd.Spec.Names.Kind)
		}
		out[v.Name] = msg
	}
	return out
}

// coerce does to u what kube's decoder of a custom resource does with a
// structural schema: unknown fields pruned (their paths returned, as
// kube's strict decoding reports them), non-nullable nulls without a
// default dropped, the metadata of embedded resources coerced; then
// defaults applied. u's own metadata is left alone (the server decodes
// it itself).
func (cs *crSchema) coerce(u map[string]any) ([]string, error) {
	unknown, err := cs.prune(u)
	if err != nil {
		return nil, err
	}
	structuraldefaulting.Default(u, cs.structural)
	return unknown, nil
}

// prune is coerce without the defaults: what kube's storage encoder does
// to an object converted to the storage version.
func (cs *crSchema) prune(u map[string]any) ([]string, error) {
	var unknown []string
	meta, hasMeta := u["metadata"]
	if !cs.preserveUnknownFields {
		unknown = structuralpruning.PruneWithOptions(u, cs.structural, true,
			structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, cs.structural)
	}
	ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u, cs.structural, false,
		schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if ferr != nil {
		return nil, ferr
	}
	unknown = append(unknown, paths...)
	if hasMeta {
		u["metadata"] = meta
	} else {
		delete(u, "metadata")
	}
	return unknown, nil
}

// setContent replaces d's fields other than apiVersion, kind and
// metadata with those of u that differ from was (d as decoded before
// coercion): a field coercion left alone keeps its bytes as written.
func setContent(d *doc, u, was map[string]any) error {
	for k := range d.rest {
		if _, ok := u[k]; !ok {
			delete(d.rest, k)
		}
	}
	for k, v := range u {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			continue
		}
		if w, ok := was[k]; ok && equality.Semantic.DeepEqual(v, w) {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return wire.NewInternalError(err)
		}
		if d.rest == nil {
			d.rest = map[string]json.RawMessage{}
		}
		d.rest[k] = b
	}
	return nil
}

// schemaCoerce prunes and defaults d as kube decodes a custom resource
// written to a version with a schema; with report, unknown fields follow
// the request's fieldValidation (a 400 under Strict, warnings under Warn).
func (c *call) schemaCoerce(d *doc, report bool) error {
	cs := c.res.schema
	if report {
		// The request's own object: coerced by the version it names.
		if cs = c.bodySchema(d); cs == nil {
			return nil
		}
	}
	u, err := toUnstructured(d)
	if err != nil {
		return err
	}
	was := runtime.DeepCopyJSON(u.Object)
	unknown, err := cs.coerce(u.Object)
	if err != nil {
		return wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
			c.res.kind, c.res.version, c.res.kind, err))
	}
	// A create's or update's body had its unknown fields checked when
	// it was decoded (schemaUnknownFields); a patch's result is checked
	// here.
	if report && len(unknown) > 0 && c.r.Method == http.MethodPatch && c.fieldValidation() != fieldValidationIgnore {
		found := &doc{}
		for _, p := range unknown {
			found.strict = append(found.strict, fmt.Sprintf("unknown field %q", p))
		}
		// kube quotes the patched object as its JSON encoding of it,
		// keys sorted.
		patched := runtime.DeepCopyJSON(was)
		if rv := d.metaString("resourceVersion"); rv != "" {
			_ = unstructured.SetNestedField(patched, rv, "metadata", "resourceVersion")
		}
		b, err := json.Marshal(patched)
		if err != nil {
			return wire.NewInternalError(err)
		}
		if err := c.checkPatched(found, b); err != nil {
			return err
		}
	}
	return setContent(d, u.Object, was)
}

// schemaUnknownFields adds to the strict errors of d, a request body
// just decoded, the fields the schema prunes, after those decoding found
// (duplicates, unknown metadata fields), as kube's decoder of a custom
// resource reports them: checkDecoded then applies the request's
// fieldValidation to all of them at once.
func (c *call) schemaUnknownFields(d *doc, body []byte) error {
	// Decoded strictly, to find duplicates decoding d left inside its
	// members (at any depth under the top level, "spec.a" say).
	obj := map[string]any{}
	nested, err := sigsjson.UnmarshalStrict(d.encode(), &obj)
	if err != nil {
		return wire.NewInternalError(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	var unknown []string
	if cs := c.bodySchema(d); cs != nil {
		unknown, err = cs.coerce(u.Object)
	}
	if err != nil {
		return wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
			c.res.kind, c.res.version, c.res.kind, err))
	}
	if len(nested) > 0 || slices.ContainsFunc(d.strict, isDuplicateError) {
		// kube's decoder lists every duplicate first, in the order it
		// meets them in the body, then the unknown fields.
		dups, err := sigsjson.UnmarshalStrict(body, &map[string]any{})
		if err != nil {
			return wire.NewInternalError(err)
		}
		var first, rest strictErrors
		for _, e := range d.strict {
			switch {
			case strings.HasPrefix(e, "yaml: "):
				first = append(first, e)
			case !isDuplicateError(e):
				rest = append(rest, e)
			}
		}
		for _, e := range dups {
			first = append(first, e.Error())
		}
		d.strict = append(first, rest...)
	}
	for _, p := range unknown {
		d.strict = append(d.strict, fmt.Sprintf("unknown field %q", p))
	}
	return nil
}

// bodySchema is the schema by which kube's decoder of a custom resource
// coerces d, an object sent to c's version (a create's or update's body,
// a patch's result): its unstructuredSchemaCoercer and defaulter take the
// version d's apiVersion names, not the endpoint's, so a body of another
// version of the group is pruned and defaulted by that version's schema
// (served or not; one the CRD does not have has none, which keeps only
// apiVersion, kind and metadata), before the handler or the validator
// refuses its version. An object of another group or kind is left alone
// (nil).
func (c *call) bodySchema(d *doc) *crSchema {
	gv, err := schema.ParseGroupVersion(d.apiVersion)
	if err != nil || gv.Group != c.res.group || d.kind != c.res.kind {
		return nil
	}
	if gv.Version == c.res.version {
		return c.res.schema
	}
	if cs, ok := c.res.versionSchemas[gv.Version]; ok {
		return cs
	}
	return &crSchema{preserveUnknownFields: c.res.schema.preserveUnknownFields}
}

// bodyVersion is the version kube's decoder names in its 400 for a body
// it decoded strictly: the one the body's apiVersion gives (a custom
// resource's), else the endpoint's.
func (c *call) bodyVersion(d *doc) string {
	if c.res.crd != "" && d.apiVersion != "" {
		if gv, err := schema.ParseGroupVersion(d.apiVersion); err == nil {
			return gv.Version
		}
	}
	return c.res.version
}

func isDuplicateError(e string) bool { return strings.HasPrefix(e, "duplicate field ") }

// validateSchema runs kube's customresource strategy's validation of d,
// written over old (nil on create), and adds its warnings.
func (c *call) validateSchema(d, old *doc) error {
	cs := c.res.schema
	u, err := toUnstructured(d)
	if err != nil {
		return err
	}
	ctx := c.r.Context()
	var errs field.ErrorList
	var warnings []string
	if old == nil {
		errs = cs.strategy.Validate(ctx, u)
		warnings = cs.strategy.WarningsOnCreate(ctx, u)
	} else {
		was, err := toUnstructured(old)
		if err != nil {
			return err
		}
		// The stored object as the request's version reads it (read as
		// kube's storage decodes it by updateFrom: not defaulted again by
		// this version's schema); the write is at the stored revision, as
		// kube's store sets it before validating.
		was.SetAPIVersion(u.GetAPIVersion())
		rv := old.metaString("resourceVersion")
		u.SetResourceVersion(rv)
		was.SetResourceVersion(rv)
		// As kube's BeforeUpdate: the metadata rules common to every
		// kind, then the strategy's (which check the metadata again:
		// kube reports such a fault twice).
		if c.status {
			errs = rest.ValidateUpdate(ctx, u, was, cs.statusStrategy)
		} else {
			errs = rest.ValidateUpdate(ctx, u, was, cs.strategy)
			warnings = cs.strategy.WarningsOnUpdate(ctx, u, was)
		}
	}
	if len(errs) > 0 {
		// Named by the object's own group and kind, as kube's store names
		// it (the unstructured object's kind, checkType): a patch may have
		// changed them; none when its apiVersion does not parse.
		var gk schema.GroupKind
		if gv, err := schema.ParseGroupVersion(d.apiVersion); err == nil {
			gk = schema.GroupKind{Group: gv.Group, Kind: d.kind}
		}
		return kubeStatus(apierrors.NewInvalid(gk, d.metaString("name"), errs))
	}
	if len(warnings) > 0 {
		c.warnStrict(strictErrors(warnings))
	}
	return nil
}

// tableColumns are the Table columns of the version's printer columns,
// as kube's tableconvertor defines them; false without a convertor.
func (cs *crSchema) tableColumns() ([]wire.TableColumnDefinition, bool) {
	if cs == nil || cs.table == nil {
		return nil, false
	}
	t, err := cs.table.ConvertToTable(context.Background(), &unstructured.UnstructuredList{}, nil)
	if err != nil {
		return nil, false
	}
	cols := make([]wire.TableColumnDefinition, 0, len(t.ColumnDefinitions))
	for _, c := range t.ColumnDefinitions {
		cols = append(cols, wire.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format,
			Description: c.Description, Priority: c.Priority})
	}
	return cols, true
}

// tableCells are the cells of the stored object value, as kube's
// tableconvertor computes them (full JSONPath, cells typed by column
// type, dates aged by kube's clock); false without a convertor.
func (cs *crSchema) tableCells(value []byte) ([]any, bool) {
	if cs == nil || cs.table == nil {
		return nil, false
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(value); err != nil {
		return nil, false
	}
	t, err := cs.table.ConvertToTable(context.Background(), u, nil)
	if err != nil || len(t.Rows) != 1 {
		return nil, false
	}
	return t.Rows[0].Cells, true
}

// readsCoerce reports whether reading a stored object can change it:
// the schema has a default, or a node that prunes (an object that does
// not preserve unknown fields) or coerces embedded metadata. Schemas
// that preserve everything and default nothing are read as stored.
func readsCoerce(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default.Object != nil || s.XEmbeddedResource {
		return true
	}
	if s.Type == "object" && !s.XPreserveUnknownFields {
		return true
	}
	if readsCoerce(s.Items) {
		return true
	}
	if s.AdditionalProperties != nil && readsCoerce(s.AdditionalProperties.Structural) {
		return true
	}
	for _, p := range s.Properties {
		if readsCoerce(&p) {
			return true
		}
	}
	return false
}

// readStored is a stored custom resource as kube serves it: its storage
// decoder prunes and defaults every object it reads with the schema (a
// default added to the CRD after an object was written shows on reads).
// The server sends stored bytes from its readers, so this is done on the
// way out; an object the schema does not change is sent as stored.
func (cs *crSchema) readStored(value []byte) []byte {
	if cs == nil || !cs.coerceReads {
		return value
	}
	return cs.rewriteStored(value, func(o map[string]any) error {
		_, err := cs.coerce(o)
		return err
	})
}

// rewriteStored is value with read applied to its content, re-encoded
// only when read changed it; an unchanged value is remembered (by cs) and
// not decoded again. Any error leaves value as stored.
func (cs *crSchema) rewriteStored(value []byte, read func(map[string]any) error) []byte {
	k := cs.unchanged.key(value)
	if cs.unchanged.has(k) {
		return value
	}
	uo := &unstructured.Unstructured{}
	if err := uo.UnmarshalJSON(value); err != nil {
		return value
	}
	was := runtime.DeepCopyJSON(uo.Object)
	if read(uo.Object) != nil {
		return value
	}
	if equality.Semantic.DeepEqual(uo.Object, was) {
		cs.unchanged.add(k)
		return value
	}
	d, err := decodeDoc(value)
	if err != nil {
		return value
	}
	if setContent(d, uo.Object, was) != nil {
		return value
	}
	return d.encodeWithRV(d.metaString("resourceVersion"))
}

// readStoredFrom is value, a custom resource stored in another version
// whose schema is stored, as cs's version reads it under conversion None:
// kube's storage decoder prunes and defaults it by the schema of the
// version stored, and its converter relabels it and prunes it by cs's,
// without cs's defaults (a field only the stored version knows is gone, a
// default only cs's version has does not show). Its apiVersion is left
// to relabel. The stored value and the reading version name the result,
// so an unchanged one is remembered as readStored remembers it.
func (cs *crSchema) readStoredFrom(value []byte, stored *crSchema) []byte {
	return cs.rewriteStored(value, func(o map[string]any) error {
		if _, err := stored.coerce(o); err != nil {
			return err
		}
		_, err := cs.prune(o)
		return err
	})
}
