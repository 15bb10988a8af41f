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
	// labels and fields are extracted once, when the entry is built, so
	// selectors never decode values. attrsOK is false when the value could
	// not be decoded; such an entry matches only the empty predicate.
	labels, fields map[string]string
	attrsOK        bool
	// alt is the value's other encoding (protobuf), built on first use.
	alt storage.Memo
}

func newEntry(kv storage.KV, attrs storage.AttrFunc) *entry {
	e := &entry{key: kv.Key, value: kv.Value, rev: kv.Revision}
	l, f, err := attrs(kv.Value)
	if err == nil {
		e.labels, e.fields, e.attrsOK = l, f, true
	}
	return e
}

func (e *entry) kv() storage.KV {
	return storage.KV{Key: e.key, Value: e.value, Revision: e.rev, Alt: &e.alt}
}

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
	out, err := storage.SetResourceVersion(value, rev)
	if err != nil {
		return value
	}
	return out
}
