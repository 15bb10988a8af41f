package cache

import (
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
		e.attrs, e.attrsOK = compactAttrs(l, f), true
	}
	return e
}

// attrs holds an entry's labels and fields in one slice of alternating
// keys and values: first the labels, then the fields. Two small maps per
// object cost ~700 bytes (at 100k ConfigMaps, 78 MB of a 282 MB live
// heap); this form costs the slice and its strings. Objects carry a
// handful of labels, so a linear scan finds a key as fast as a map would.
type attrs struct {
	kv      []string
	nLabels int // label pairs at the front of kv
}

func compactAttrs(labels, fields map[string]string) attrs {
	kv := make([]string, 0, 2*(len(labels)+len(fields)))
	for k, v := range labels {
		kv = append(kv, k, v)
	}
	for k, v := range fields {
		kv = append(kv, k, v)
	}
	return attrs{kv: kv, nLabels: len(labels)}
}

// label returns the value of label k and whether it is set.
func (a attrs) label(k string) (string, bool) {
	for i := 0; i < 2*a.nLabels; i += 2 {
		if a.kv[i] == k {
			return a.kv[i+1], true
		}
	}
	return "", false
}

// field returns the value of field k, "" when absent (as kube compares a
// missing field).
func (a attrs) field(k string) string {
	for i := 2 * a.nLabels; i < len(a.kv); i += 2 {
		if a.kv[i] == k {
			return a.kv[i+1]
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
	return e.attrsOK && p.MatchesLookup(e.attrs.label, e.attrs.field)
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
