package server

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
)

// A protobuf body of a built-in kind is decoded into its k8s.io/api type,
// encoded as JSON for the doc every check reads (decodeBody), and, in
// admitTyped, decoded from that JSON into the type again (decodeTyped):
// the JSON decode is the dearest step of a create after managedFields.
// The doc's body view (a typedView whose metadata snapshot is not used)
// keeps the object the protobuf decoded to, with a snapshot of the doc's
// fields other than metadata, and decodeTyped takes it instead of decoding
// the JSON while the doc still holds exactly those fields. Its metadata is
// replaced by the doc's, decoded from JSON as before, since the server
// sets some of it (name, uid, creationTimestamp) in between.
//
// That is the same object the JSON decode gives only where json.Marshal
// writes what a decode reads back as it was. Kinds whose objects may hold
// a field it rewrites (typedView's protoExact) or, outside their own
// metadata, a value of a type with its own JSON form (topCustomJSON:
// times, IntOrStrings, …) never keep one, nor does a body json.Marshal
// wrote with \ufffd (invalid UTF-8 in a string, which the object still
// holds).

// rememberBody makes external, the object d's JSON encoding b was written
// from by json.Marshal, d's body view, where that is exact (see above).
func (d *doc) rememberBody(t *typedKind, external runtime.Object, b []byte) {
	if t == nil || t.bodyType() != reflect.TypeOf(external) || bytes.Contains(b, []byte(`\ufffd`)) {
		return
	}
	d.body = &typedView{obj: external, apiVersion: d.apiVersion, kind: d.kind, rest: maps.Clone(d.rest)}
}

// takeBody hands out d's body view once, with d's metadata, if d still
// holds the fields it was remembered with and is of t's served kind;
// otherwise nil, and the caller decodes d's JSON.
func (d *doc) takeBody(t *typedKind) runtime.Object {
	v := d.body
	if !v.unchanged(d) || d.apiVersion != t.external.GroupVersion().String() || d.kind != t.external.Kind {
		return nil
	}
	v.used = true
	acc, ok := v.obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil
	}
	m, ok := acc.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil
	}
	// The metadata as decodeTyped's JSON holds it: d.encode's, without
	// resourceVersion.
	var b bytes.Buffer
	b.WriteByte('{')
	writeOrdered(&b, d.meta, nil, "resourceVersion")
	b.WriteByte('}')
	*m = metav1.ObjectMeta{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b.Bytes(), m); err != nil {
		return nil
	}
	v.obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(d.apiVersion, d.kind))
	return v.obj
}

// bodyType is the Go type of t's served objects if a protobuf body of t
// may be used as decoded (see above), else nil; computed once per kind.
func (t *typedKind) bodyType() reflect.Type {
	if v, ok := bodyTypes.Load(t.external); ok {
		typ, _ := v.(reflect.Type)
		return typ
	}
	var typ reflect.Type
	if !t.converts() && t.protoExact() {
		if obj, err := t.scheme.New(t.external); err == nil && !topCustomJSON(reflect.TypeOf(obj)) {
			typ = reflect.TypeOf(obj)
		}
	}
	bodyTypes.Store(t.external, typ)
	return typ
}

var (
	bodyTypes      sync.Map
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
)

// topCustomJSON reports whether an object of typ (a pointer to a kind's
// struct) may hold, outside its own ObjectMeta, a value of a type with its
// own JSON encoding or decoding: a time (a protobuf time has nanoseconds,
// and years no JSON time parses; a pod template's metadata counts), an
// IntOrString (protobuf carries both of its values, JSON only the one its
// type selects), a Quantity, raw JSON.
func topCustomJSON(typ reflect.Type) bool {
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return true
	}
	seen := map[reflect.Type]bool{}
	for _, f := range reflect.VisibleFields(typ.Elem()) {
		if len(f.Index) == 1 && f.Type != objectMetaType && customJSON(f.Type, seen) {
			return true
		}
	}
	return false
}

var (
	jsonMarshalerType   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// customJSON reports whether a value of typ may hold one of a type that
// has its own JSON encoding or decoding.
func customJSON(typ reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[typ] {
		return false
	}
	seen[typ] = true
	for _, t := range []reflect.Type{typ, reflect.PointerTo(typ)} {
		if t.Implements(jsonMarshalerType) || t.Implements(jsonUnmarshalerType) {
			return true
		}
	}
	switch typ.Kind() {
	case reflect.Pointer, reflect.Array, reflect.Map, reflect.Slice:
		return customJSON(typ.Elem(), seen)
	case reflect.Interface:
		return true
	case reflect.Struct:
		for i := range typ.NumField() {
			if customJSON(typ.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}
