package cache

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/listwatch/listwatch/storage"
)

// entry is one object as the cache holds it. Entries are immutable once
// built: snapshots, events and pages share them, and ListPage.Items
// reference value without copying.
type entry struct {
	key string
	// value is the object's JSON with metadata.resourceVersion == rev.
	value []byte
	rev   int64
	// labels and fields are extracted once, when the entry is built, so
	// selectors never decode values. attrsOK is false when the value could
	// not be decoded; such an entry matches only the empty predicate.
	labels, fields map[string]string
	attrsOK        bool
}

func newEntry(kv storage.KV, attrs storage.AttrFunc) *entry {
	e := &entry{key: kv.Key, value: kv.Value, rev: kv.Revision}
	l, f, err := attrs(kv.Value)
	if err == nil {
		e.labels, e.fields, e.attrsOK = l, f, true
	}
	return e
}

func (e *entry) kv() storage.KV { return storage.KV{Key: e.key, Value: e.value, Revision: e.rev} }

// matches tests e against p with the attrs stored in e.
func (e *entry) matches(p storage.Predicate) bool {
	if p.Empty() {
		return true
	}
	return e.attrsOK && p.MatchesAttrs(e.labels, e.fields)
}

// withRevision returns e's value with metadata.resourceVersion set to rev:
// a DELETED event carries the last value at the delete's revision, and a
// watch whose selector stops matching gets the previous value at the
// update's revision, as kube-apiserver sends them.
func withRevision(value []byte, rev int64) []byte {
	// Stored values come from storage.WithResourceVersion, which puts the
	// resourceVersion first in metadata; splice there when we find it and
	// decode only for values written some other way.
	const marker = `"metadata":{"resourceVersion":"`
	if i := bytes.Index(value, []byte(marker)); i >= 0 && topLevel(value, i) {
		start := i + len(marker)
		end := bytes.IndexByte(value[start:], '"')
		if end >= 0 {
			end += start
			want := strconv.AppendInt(nil, rev, 10)
			if bytes.Equal(value[start:end], want) {
				return value
			}
			out := make([]byte, 0, len(value)+len(want))
			out = append(out, value[:start]...)
			out = append(out, want...)
			return append(out, value[end:]...)
		}
	}
	return withRevisionSlow(value, rev)
}

// topLevel reports whether offset i of the JSON text b lies directly in
// the outermost object, outside any string.
func topLevel(b []byte, i int) bool {
	depth, inString := 0, false
	for j := 0; j < i; j++ {
		switch c := b[j]; {
		case inString && c == '\\':
			j++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth == 1 && !inString && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
}

func withRevisionSlow(value []byte, rev int64) []byte {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return value
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(obj["metadata"], &meta); err != nil || meta == nil {
		return value
	}
	meta["resourceVersion"], _ = json.Marshal(strconv.FormatInt(rev, 10))
	var err error
	if obj["metadata"], err = json.Marshal(meta); err != nil {
		return value
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return value
	}
	return out
}
