package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/wire"
)

// A write of a built-in kind ends with its typed object, the result of
// kube's strategy, which encodeInto encodes as JSON into the doc for
// storage; a protobuf response then decoded the stored JSON into the type
// again (protoItem). A typedView keeps that object, with a snapshot of
// the doc fields it encodes to, and hands it out only while the doc still
// holds exactly those fields, so the response is encoded from it. Anything
// that changed the doc in between (a CRD's status, a custom admission
// step) makes the snapshot differ, and the stored JSON is decoded as
// before. Values are compared byte for byte; nothing in the server edits a
// json.RawMessage in place, it replaces it.
//
// The object and its JSON form must decode to the same protobuf message.
// They do when the object came from a JSON decode and its JSON form is
// json.Marshal's valid UTF-8, except in fields json.Marshal rewrites:
// raw JSON (RawExtension and apiextensions' JSON, compacted and escaped),
// []byte fields, empty ones being left out, and Quantities, whose string
// a decode may give back in another form. Kinds with such fields
// (protoExact) never keep a view. A protobuf request body is used as
// decoded only under stricter rules (bodyview.go): json.Marshal does not
// normalise what a protobuf body may hold (invalid UTF-8, times no JSON
// decoder reads back), and the decode from JSON refuses or repairs those
// as kube's JSON path does.
type typedView struct {
	obj              runtime.Object
	apiVersion, kind string
	meta, rest       map[string]json.RawMessage
	// used: the object was handed out, and may have been changed since.
	// Shared by every copy of the doc, so it is handed out once.
	used bool
}

// remember makes obj d's view: obj encodes to d's fields.
func (d *doc) remember(obj runtime.Object) {
	d.view = &typedView{obj: obj, apiVersion: d.apiVersion, kind: d.kind,
		meta: maps.Clone(d.meta), rest: maps.Clone(d.rest)}
}

// takeView hands out d's view object once, if d still holds the fields
// it was remembered with; otherwise nil.
func (d *doc) takeView() runtime.Object {
	v := d.view
	if !v.unchanged(d) || !maps.EqualFunc(v.meta, d.meta, rawEqual) {
		return nil
	}
	v.used = true
	return v.obj
}

// unchanged reports whether v is there, not yet handed out, and d still
// holds the type and the fields other than metadata v was made with.
func (v *typedView) unchanged(d *doc) bool {
	return v != nil && !v.used && v.apiVersion == d.apiVersion && v.kind == d.kind &&
		maps.EqualFunc(v.rest, d.rest, rawEqual)
}

func rawEqual(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// splitTyped replaces d's fields with those of b, json.Marshal's encoding
// of external, t's object after kube's strategy, and keeps external as
// d's view where the response may be encoded from it (see typedView).
// Invalid UTF-8 becomes U+FFFD first, as decodeDoc does it: raw JSON
// fields pass json.Marshal unchecked.
func (d *doc) splitTyped(t *typedKind, external runtime.Object, b []byte) error {
	valid := validUTF8(b)
	if err := d.splitEncoded(valid); err != nil {
		return err
	}
	if !t.converts() && t.protoExact() && len(valid) == len(b) && &valid[0] == &b[0] && !marshalEscaped(b) {
		d.remember(external)
	}
	return nil
}

// marshalEscaped reports whether json.Marshal wrote b with an escape
// that may stand for what the object holds otherwise: \ufffd, written only
// for invalid UTF-8 in a string (which the object still holds), and the
// escapes of <, >, &, U+2028 and U+2029, which it also writes into raw
// JSON fields (managedFields' sets) whose bytes the object keeps as they
// were.
func marshalEscaped(b []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j + 2
		if i+4 > len(b) {
			return false
		}
		switch string(b[i : i+4]) {
		case "fffd", "003c", "003e", "0026", "2028", "2029":
			return true
		}
	}
}

// splitEncoded replaces d's fields with those of b, the JSON encoding of
// a typed object (json.Marshal's: compact, each key once, metadata an
// object with ObjectMeta's fields only) in valid UTF-8. It is decodeDoc
// without the checks such bytes always pass, and without decoding: the
// fields are slices of b.
func (d *doc) splitEncoded(b []byte) error {
	top, ok := compactMembers(b)
	if !ok {
		return wire.NewInternalError(fmt.Errorf("not a JSON object: %.40q", b))
	}
	meta := map[string]json.RawMessage{}
	if raw, has := top["metadata"]; has {
		if meta, ok = compactMembers(raw); !ok {
			return wire.NewInternalError(fmt.Errorf("metadata is not a JSON object: %.40q", raw))
		}
	}
	delete(top, "metadata")
	delete(top, "apiVersion")
	delete(top, "kind")
	d.meta, d.rest = meta, top
	return nil
}

// protoExact reports whether t's objects hold no field json.Marshal
// rewrites (see typedView), computed once per kind.
func (t *typedKind) protoExact() bool {
	if v, ok := protoExactKinds.Load(t.external); ok {
		return v.(bool)
	}
	obj, err := t.scheme.New(t.external)
	exact := err == nil && !rewritten(reflect.TypeOf(obj), map[reflect.Type]bool{})
	protoExactKinds.Store(t.external, exact)
	return exact
}

// protoExactKinds caches protoExact by kind.
var protoExactKinds sync.Map

var (
	rawExtensionType = reflect.TypeFor[runtime.RawExtension]()
	crdJSONType      = reflect.TypeFor[apiextensionsv1.JSON]()
	// A Quantity is written as its String(), which a decode need not
	// give back for one computed by defaulting (a sum of requests).
	quantityType = reflect.TypeFor[kresource.Quantity]()
	// managedFields' sets are raw JSON too, but written compact by
	// structured-merge-diff; splitTyped checks the escapes json.Marshal
	// adds. A time.Time is encoded as a string.
	fieldsV1Type = reflect.TypeFor[metav1.FieldsV1]()
	timeType     = reflect.TypeFor[time.Time]()
)

// rewritten reports whether a value of typ may hold a field json.Marshal
// rewrites: raw JSON, or a []byte field of a struct.
func rewritten(typ reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[typ] {
		return false
	}
	seen[typ] = true
	switch typ {
	case rawExtensionType, crdJSONType, quantityType:
		return true
	case fieldsV1Type, timeType:
		return false
	}
	switch typ.Kind() {
	case reflect.Pointer, reflect.Array, reflect.Map:
		// A []byte map value is written whole, empty or not (below).
		return rewritten(typ.Elem(), seen)
	case reflect.Slice:
		return typ.Elem().Kind() != reflect.Uint8 && rewritten(typ.Elem(), seen)
	case reflect.Interface:
		return true
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i).Type
			if f.Kind() == reflect.Slice && f.Elem().Kind() == reflect.Uint8 {
				return true
			}
			if rewritten(f, seen) {
				return true
			}
		}
	}
	return false
}

// compactMembers splits a compact JSON object, as json.Marshal writes
// one, into its members, each value a slice of b. It does not validate: a
// b that is no compact object gives false or a wrong answer, never a
// panic. The last of a repeated key wins, as in json.Unmarshal.
func compactMembers(b []byte) (map[string]json.RawMessage, bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	m := make(map[string]json.RawMessage, 8)
	i := 1
	if b[i] == '}' {
		return m, i == len(b)-1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		end := stringEnd(b, i)
		if end < 0 || end+1 >= len(b) || b[end+1] != ':' {
			return nil, false
		}
		key, ok := memberKey(b[i : end+1])
		if !ok {
			return nil, false
		}
		start := end + 2
		j := valueEnd(b, start)
		if j <= start || j >= len(b) {
			return nil, false
		}
		m[key] = b[start:j:j]
		switch b[j] {
		case ',':
			i = j + 1
		case '}':
			return m, j == len(b)-1
		default:
			return nil, false
		}
	}
}

// stringEnd is the index of the quote closing the string that opens at
// b[i], or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

// memberKey decodes a quoted key, unquoting only when it has escapes.
func memberKey(q []byte) (string, bool) {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1]), true
	}
	var k string
	return k, json.Unmarshal(q, &k) == nil
}

// valueEnd is the index just past the compact JSON value starting at
// b[i]: the comma or closing brace that follows it in its object.
func valueEnd(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			if j = stringEnd(b, j); j < 0 {
				return -1
			}
		case '{', '[':
			depth++
		case ']':
			depth--
		case '}':
			if depth == 0 {
				return j
			}
			depth--
		case ',':
			if depth == 0 {
				return j
			}
		}
		if depth < 0 {
			return -1
		}
	}
	return -1
}

// respondWith keeps obj, the object just stored at rev as stored, for a
// protobuf response, so it is not decoded again from the stored JSON.
func (c *call) respondWith(obj runtime.Object, rev int64, stored []byte) {
	if obj == nil || c.res.converted {
		return
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		c.written = writtenObject{obj: obj, value: stored}
	}
}

// writtenObject is a typed object and the stored value it encodes.
type writtenObject struct {
	obj   runtime.Object
	value []byte
}

// protoWritten is the protobuf message of value, a stored object: from
// the typed object the request wrote, when value is what it wrote, else
// decoded from value.
func (c *call) protoWritten(value []byte) ([]byte, error) {
	if m, ok := c.written.obj.(protoMarshaler); ok && bytes.Equal(value, c.written.value) {
		return m.Marshal()
	}
	return protoItem(c.res, value)
}
