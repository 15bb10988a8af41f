package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/wire"
)

// A write of a built-in kind converts its object between forms several
// times: a protobuf body is decoded to its type and re-encoded as JSON for
// the doc pipeline (object.go), the doc is decoded into the type again for
// kube's strategy (admitTyped), the result is encoded back into the doc
// for storage (encodeInto), and a protobuf response decodes the stored
// JSON into the type once more (protoItem). A typedView saves the second
// and the last of these: it remembers a typed object together with a
// snapshot of the doc fields that object encodes to, and hands the object
// out only while the doc still holds exactly those fields. Anything that
// changed the doc in between (a CRD's status, a webhook, a subresource
// write) makes the snapshot differ, and the object is built from the doc
// as before. Values are compared byte for byte; nothing in the server
// edits a json.RawMessage in place, it replaces it.
type typedView struct {
	obj              runtime.Object
	apiVersion, kind string
	// meta is nil when the view covers only the fields outside metadata
	// (a request body, whose metadata the server changes before the
	// strategy sees it).
	meta, rest map[string]json.RawMessage
	// used: the object was handed out, and may have been changed since.
	// Shared by every copy of the doc, so it is handed out once.
	used bool
}

// remember makes obj d's view: obj encodes to d's fields outside
// metadata and, if withMeta, to its metadata too.
func (d *doc) remember(obj runtime.Object, withMeta bool) {
	v := &typedView{obj: obj, apiVersion: d.apiVersion, kind: d.kind, rest: maps.Clone(d.rest)}
	if withMeta {
		v.meta = maps.Clone(d.meta)
	}
	d.view = v
}

// takeView hands out d's view object once, if d still holds the fields
// it was remembered with (metadata too if withMeta, which needs a view
// that covers it); otherwise nil.
func (d *doc) takeView(withMeta bool) runtime.Object {
	v := d.view
	if v == nil || v.used || v.apiVersion != d.apiVersion || v.kind != d.kind ||
		!maps.EqualFunc(v.rest, d.rest, rawEqual) {
		return nil
	}
	if withMeta && (v.meta == nil || !maps.EqualFunc(v.meta, d.meta, rawEqual)) {
		return nil
	}
	v.used = true
	return v.obj
}

func rawEqual(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// objectMetaOf is obj's ObjectMeta, which every built-in kind embeds.
func objectMetaOf(obj runtime.Object) (*metav1.ObjectMeta, bool) {
	a, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, false
	}
	m, ok := a.GetObjectMeta().(*metav1.ObjectMeta)
	return m, ok
}

// bodyObject is decodeTyped's shortcut for a body whose typed object
// decodeBody kept (a protobuf body): that object with its metadata
// replaced by d's, which the server has set since (name, uid,
// creationTimestamp, namespace). The metadata is decoded as kube's
// decoder would decode it in the whole object; if that reports anything
// (which decodeMeta's cleaning makes impossible but for nested unknown
// fields), false, and the caller decodes the whole doc to report it as
// kube does.
func (d *doc) bodyObject(t *typedKind, strict bool) (runtime.Object, bool) {
	obj := d.takeView(false)
	if obj == nil || obj.GetObjectKind().GroupVersionKind() != t.external {
		return nil, false
	}
	m, ok := objectMetaOf(obj)
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	writeFields(&b, d.meta)
	b.WriteByte('}')
	*m = metav1.ObjectMeta{}
	if strict {
		errs, err := kjson.UnmarshalStrict(b.Bytes(), m, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil || len(errs) > 0 {
			return nil, false
		}
	} else if err := kjson.UnmarshalCaseSensitivePreserveInts(b.Bytes(), m); err != nil {
		return nil, false
	}
	return obj, true
}

// splitEncoded replaces d's fields with those of b, the JSON encoding of
// a typed object (json.Marshal's: valid UTF-8, compact, each key once,
// metadata an object with ObjectMeta's fields only). It is decodeDoc
// without the checks such bytes always pass, and without decoding: the
// fields are slices of b.
func (d *doc) splitEncoded(b []byte) error {
	top, ok := compactMembers(b)
	if !ok {
		return wire.NewInternalError(fmt.Errorf("not a JSON object: %.40q", b))
	}
	return d.split(top)
}

// decodeEncoded is decodeDoc for b, the JSON encoding of a typed object
// (see splitEncoded).
func decodeEncoded(b []byte) (*doc, error) {
	top, ok := compactMembers(b)
	if !ok {
		return nil, wire.NewInternalError(fmt.Errorf("not a JSON object: %.40q", b))
	}
	d := &doc{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"apiVersion", &d.apiVersion}, {"kind", &d.kind}} {
		if raw, ok := top[f.name]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return nil, wire.NewInternalError(err)
			}
		}
	}
	return d, d.split(top)
}

// split sets d's fields from top, the members of an encoded object.
func (d *doc) split(top map[string]json.RawMessage) error {
	var ok bool
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
	if m, ok := objectMetaOf(obj); ok {
		m.ResourceVersion = strconv.FormatInt(rev, 10)
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
