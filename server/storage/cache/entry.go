package cache

import (
	"strings"
	"unique"

	"github.com/listwatch/listwatch/server/storage"
)

// entry is one object as the cache holds it. Entries are immutable once
// built: snapshots, events and pages share them, and ListPage.Items
// reference value without copying.
type entry struct {
	key string
	// value is the object's JSON with metadata.resourceVersion == rev.
	value []byte
	rev   int64
	// attrs are the labels and selectable fields, extracted once when the
	// entry is built, so selectors never decode values. attrsOK is false
	// when the value could not be decoded; such an entry matches only the
	// empty predicate.
	attrs   attrs
	attrsOK bool
	// alt is the value's other encoding (protobuf), built on first use.
	alt storage.Memo
}

func newEntry(kv storage.KV, attrFn storage.AttrFunc) *entry {
	e := &entry{key: kv.Key, value: kv.Value, rev: kv.Revision}
	l, f, err := attrFn(kv.Value)
	if err == nil {
		e.attrs, e.attrsOK = compactAttrs(kv.Key, l, f), true
	}
	return e
}

// attrs holds an entry's labels and fields in one slice of alternating
// keys and values: first the labels, then the fields. Two small maps per
// object cost ~700 bytes (at 100k ConfigMaps, 78 MB of a 282 MB live
// heap); this form costs the slice. Objects carry a handful of labels, so
// a linear scan finds a key as fast as a map would. Each string is
// interned (a unique.Handle, half a string's header): label keys and
// values, field names and most field values repeat from object to object.
// A field whose value is the object's name (metadata.name: the last
// segment of its key) holds the zero Handle and is read from the key.
type attrs struct {
	kv      []unique.Handle[string]
	nLabels int // label pairs at the front of kv
}

func compactAttrs(key string, labels, fields map[string]string) attrs {
	name := key[strings.LastIndexByte(key, '/')+1:]
	kv := make([]unique.Handle[string], 0, 2*(len(labels)+len(fields)))
	for k, v := range labels {
		kv = append(kv, unique.Make(k), unique.Make(v))
	}
	for k, v := range fields {
		var h unique.Handle[string]
		if v != name {
			h = unique.Make(v)
		}
		kv = append(kv, unique.Make(k), h)
	}
	return attrs{kv: kv, nLabels: len(labels)}
}

// label returns the value of label k and whether it is set.
func (e *entry) label(k string) (string, bool) {
	a := &e.attrs
	for i := 0; i < 2*a.nLabels; i += 2 {
		if a.kv[i].Value() == k {
			return a.kv[i+1].Value(), true
		}
	}
	return "", false
}

// field returns the value of field k, "" when absent (as kube compares a
// missing field).
func (e *entry) field(k string) string {
	a := &e.attrs
	for i := 2 * a.nLabels; i < len(a.kv); i += 2 {
		if a.kv[i].Value() == k {
			if a.kv[i+1] == (unique.Handle[string]{}) {
				return e.key[strings.LastIndexByte(e.key, '/')+1:]
			}
			return a.kv[i+1].Value()
		}
	}
	return ""
}

func (e *entry) kv() storage.KV {
	return storage.KV{Key: e.key, Value: e.value, Revision: e.rev, Alt: &e.alt}
}

// matches tests e against p with the attrs stored in e.
func (e *entry) matches(p storage.Predicate) bool {
	if p.Empty() {
		return true
	}
	return e.attrsOK && p.MatchesLookup(e.label, e.field)
}

// withRevision returns e's value with metadata.resourceVersion set to rev:
// a DELETED event carries the last value at the delete's revision, and a
// watch whose selector stops matching gets the previous value at the
// update's revision, as kube-apiserver sends them.
func withRevision(value []byte, rev int64) []byte {
	out, err := storage.SetResourceVersion(value, rev)
	if err != nil {
		return value
	}
	return out
}
