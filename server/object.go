package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/listwatch/listwatch/server/storage"

	"github.com/listwatch/listwatch/wire"
)

// doc is an object being written: its type, its metadata fields kept raw,
// and the rest of its fields kept raw. It is stored canonically by
// encode: a built-in object in kube's typed order (kind, apiVersion,
// metadata in ObjectMeta's order, then its type's fields: kubeOrder),
// anything else apiVersion, kind, metadata first, then the other fields
// by name, so storage.WithResourceVersion finds metadata after two short
// fields.
type doc struct {
	apiVersion, kind string
	meta             map[string]json.RawMessage
	rest             map[string]json.RawMessage

	// strict lists the metadata fields decoding dropped, as kube's strict
	// decoder words them (see decodeMeta): a request's fieldValidation
	// decides whether they are warnings or a refusal. Stored values are
	// decoded the same way and this is ignored for them.
	strict strictErrors

	// view is a typed object these fields encode, while they are
	// unchanged (typedview.go).
	view *typedView
	// body is the typed object a protobuf body decoded to, while these
	// fields are unchanged (bodyview.go).
	body *typedView

	// members is how many distinct keys the decoded JSON object had;
	// repeated is whether one of them was there more than once.
	members  int
	repeated bool
}

// decodeDoc parses a request body or a stored value. Anything that is not
// a JSON object with an object (or absent) metadata is a 400. Invalid
// UTF-8 in strings becomes U+FFFD first (see validUTF8), and metadata is
// decoded as kube decodes an ObjectMeta (see decodeMeta).
func decodeDoc(b []byte) (*doc, error) {
	if v := validUTF8(b); len(b) > 0 && &v[0] == &b[0] {
		// The values are slices of b: a stored object's bytes are shared
		// with the watch cache, a body's are the caller's.
		b = bytes.Clone(b)
	} else {
		b = v
	}
	ms, ok := splitDoc(b)
	if !ok {
		var top map[string]json.RawMessage
		err := json.Unmarshal(b, &top)
		if err == nil {
			err = fmt.Errorf("expected a JSON object")
		}
		return nil, wire.NewBadRequest("the object provided is unrecognized: json parse error: " + err.Error())
	}
	top := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		top[m.key] = m.val // the last of a repeated key, as encoding/json
	}
	d := &doc{meta: map[string]json.RawMessage{}, rest: top, members: len(top), repeated: len(top) < len(ms)}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"apiVersion", &d.apiVersion}, {"kind", &d.kind}} {
		if raw, ok := top[f.name]; ok {
			if err := unmarshalString(raw, f.dst); err != nil {
				return nil, wire.NewBadRequest(fmt.Sprintf("the object provided is unrecognized: %s must be a string", f.name))
			}
			delete(top, f.name)
		}
	}
	if raw, ok := top["metadata"]; ok {
		if !bytes.Equal(raw, []byte("null")) {
			meta, ok := decodeMeta(raw, &d.strict)
			if !ok {
				return nil, wire.NewBadRequest("the object provided is unrecognized: metadata must be an object")
			}
			d.meta = meta
		}
		delete(top, "metadata")
	}
	return d, nil
}

// unmarshalString decodes a JSON string (or null, leaving s) as
// encoding/json would, without it when there is nothing to unescape.
func unmarshalString(raw []byte, s *string) error {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 && bytes.IndexByte(raw[1:n-1], '"') < 0 {
		*s = string(raw[1 : n-1])
		return nil
	}
	return json.Unmarshal(raw, s)
}

// metaString returns a string metadata field, "" if absent or not a string.
func (d *doc) metaString(k string) string {
	var s string
	if raw, ok := d.meta[k]; ok {
		_ = unmarshalString(raw, &s)
	}
	return s
}

func (d *doc) setMeta(k string, v any) {
	b, _ := json.Marshal(v)
	d.meta[k] = b
}

// objectMeta decodes the metadata for validation.
func (d *doc) objectMeta() (wire.ObjectMeta, error) {
	var m wire.ObjectMeta
	b, _ := json.Marshal(d.meta)
	if err := json.Unmarshal(b, &m); err != nil {
		return m, wire.NewBadRequest("the object provided is unrecognized: metadata: " + err.Error())
	}
	return m, nil
}

// encode writes the canonical stored form. It never includes
// metadata.resourceVersion: storage adds it on read.
func (d *doc) encode() []byte { return d.encodeFields("resourceVersion") }

// encodeFields writes the canonical form, without the metadata fields
// skip names.
func (d *doc) encodeFields(skip ...string) []byte {
	var b bytes.Buffer
	b.Grow(48 + len(d.apiVersion) + len(d.kind) + fieldsLen(d.meta) + fieldsLen(d.rest))
	if o := kubeOrder(d.apiVersion, d.kind); o != nil {
		b.WriteString(`{"kind":`)
		writeJSONString(&b, d.kind)
		b.WriteString(`,"apiVersion":`)
		writeJSONString(&b, d.apiVersion)
		b.WriteString(`,"metadata":{`)
		writeOrdered(&b, d.meta, metaOrder, skip...)
		b.WriteByte('}')
		if len(d.rest) > 0 {
			b.WriteByte(',')
			writeOrdered(&b, d.rest, o.top)
		}
		b.WriteByte('}')
		return b.Bytes()
	}
	b.WriteString(`{"apiVersion":`)
	writeJSONString(&b, d.apiVersion)
	b.WriteString(`,"kind":`)
	writeJSONString(&b, d.kind)
	b.WriteString(`,"metadata":{`)
	writeOrdered(&b, d.meta, nil, skip...)
	b.WriteByte('}')
	if len(d.rest) > 0 {
		b.WriteByte(',')
		writeOrdered(&b, d.rest, nil)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// fieldsLen is about what writeOrdered writes for m (exactly, for
// compact values and keys without escapes).
func fieldsLen(m map[string]json.RawMessage) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v) + 4
	}
	return n
}

// writeJSONString writes s as json.Marshal would.
func writeJSONString(b *bytes.Buffer, s string) {
	if plainJSONString(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	q, _ := json.Marshal(s)
	b.Write(q)
}

// plainJSONString reports whether json.Marshal writes s as is between
// quotes: printable ASCII without '"', '\\' or the characters it
// escapes for HTML ('<', '>', '&').
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x80, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// isCompact reports whether raw, a JSON value a doc holds (decoded or
// marshalled, so valid), has no whitespace outside its strings: what
// json.Compact would write unchanged. It is a plain byte loop, several
// times cheaper than Compact's scanner, and values json.Marshal made (all
// of a typed kind's, after encodeInto) always pass.
func isCompact(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	in := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			return false
		}
	}
	return !in
}

// field returns a top-level field decoded into v; false if absent.
func (d *doc) field(name string, v any) bool {
	raw, ok := d.rest[name]
	return ok && json.Unmarshal(raw, v) == nil
}

func (d *doc) setField(name string, v any) {
	b, _ := json.Marshal(v)
	d.rest[name] = b
}

// encodeWithRV is encode with metadata.resourceVersion set to rv, the form
// a client sees and a patch applies to.
func (d *doc) encodeWithRV(rv string) []byte {
	if rv == "" {
		return d.encode()
	}
	b := d.encode()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return b
	}
	out, err := storage.WithResourceVersion(b, n)
	if err != nil {
		return b
	}
	return out
}
