package server

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// coerceCustomMetaSlow is coerceCustomMeta without its shortcut: every
// field is compared with the coerced value's encoding. The shortcut must
// not change what it does.
func coerceCustomMetaSlow(d *doc) {
	if len(d.meta) == 0 {
		return
	}
	b, err := json.Marshal(d.meta)
	if err != nil {
		return
	}
	var om metav1.ObjectMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &om); err != nil {
		return
	}
	coerced, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&om)
	if err != nil {
		return
	}
	for k, raw := range d.meta {
		v, ok := coerced[k]
		if !ok {
			delete(d.meta, k)
			continue
		}
		nb, err := json.Marshal(v)
		if err != nil || sameJSON(raw, nb) {
			continue
		}
		d.meta[k] = nb
	}
}

// crmetaSeeds are metadata as clients send them and as writes leave
// them: empties and nulls, whitespace, unsorted keys, escapes, numbers
// spelt otherwise, fractional and null times, owner references with
// nulls, managed fields as setManagedFields writes them and as a client
// may, and fields of the wrong type.
var crmetaSeeds = []string{
	`{"name":"w","labels":{"app":"bench","v":"7"}}`,
	benchStoredGadgetMeta,
	`{"name":"w","labels":{},"annotations":{},"finalizers":[],"ownerReferences":[]}`,
	`{"name":"w","labels":null,"annotations":null,"finalizers":null,"ownerReferences":null,"generateName":"","uid":"","selfLink":"","generation":0,"deletionGracePeriodSeconds":null,"managedFields":null}`,
	`{"name":"w","labels":{"x":null},"annotations":{"y":null}}`,
	`{"name":"w","labels":{"b":"2","a":"1"}}`,
	`{"name" : "w", "labels": { "a" : "1" }, "generation" : 2}`,
	`{"name":"\u0077","namespace":"bench","labels":{"a":"\u00e9"}}`,
	`{"name":"w","generation":1.0,"deletionGracePeriodSeconds":30}`,
	`{"name":"w","generation":1e0}`,
	`{"name":"w","creationTimestamp":null}`,
	`{"name":"w","creationTimestamp":"2026-01-01T00:00:00Z"}`,
	`{"name":"w","creationTimestamp":"2026-01-01T00:00:00.123456Z","deletionTimestamp":"2026-01-01T00:00:01.5+02:00"}`,
	`{"name":"w","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"x","uid":"00000000-0000-0000-0000-000000000001","controller":null,"blockOwnerDeletion":null}]}`,
	`{"name":"w","ownerReferences":[{"uid":"u","name":"x","kind":"ConfigMap","apiVersion":"v1","controller":true,"blockOwnerDeletion":false}]}`,
	`{"name":"w","managedFields":[{"manager":"m","operation":"Update","apiVersion":"example.com/v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}}]}`,
	`{"name":"w","managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}},"manager":"m","operation":"Apply","time":"2026-01-01T00:00:00.5Z"}]}`,
	`{"name":"w","managedFields":[{"manager":"m","operation":"Update","subresource":"","time":null,"fieldsV1":{ "f:spec" : { } }}]}`,
	benchStoredGadgetMetaSorted,
	`{"name":"w","managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:b":{},"f:a":{}}},"manager":"m","operation":"Update","subresource":"status","time":"2026-01-01T00:00:00Z"}]}`,
	`{"name":"w","managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","manager":"m","operation":"Update","subresource":"","time":"2026-01-01T00:00:00Z"}]}`,
	`{"name":"w","managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{},"manager":"m","operation":"Update","time":"2026-01-01T00:00:00+01:00"}]}`,
	`{"name":"w","managedFields":[{}]}`,
	`{"name":"w","managedFields":[]}`,
	`{"name":"w","finalizers":["example.com/f","example.com/f"]}`,
	`{"name":"w","labels":"notamap"}`,
	`{"name":"w","generation":"1"}`,
	`{"name":"w","resourceVersion":"12","uid":"0b6c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"}`,
}

// TestCoerceCustomMetaShortcut checks coerceCustomMeta against
// coerceCustomMetaSlow on crmetaSeeds (FuzzCoerceCustomMeta searches
// further).
func TestCoerceCustomMetaShortcut(t *testing.T) {
	for _, m := range crmetaSeeds {
		checkCoerceCustomMeta(t, m)
	}
}

func FuzzCoerceCustomMeta(f *testing.F) {
	for _, m := range crmetaSeeds {
		f.Add(m)
	}
	f.Fuzz(checkCoerceCustomMeta)
}

// checkCoerceCustomMeta requires coerceCustomMeta and
// coerceCustomMetaSlow to leave a custom resource with metadata m (as
// decodeDoc takes it) with the same fields, byte for byte.
func checkCoerceCustomMeta(t *testing.T, m string) {
	d, err := decodeDoc([]byte(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":` + m + `}`))
	if err != nil {
		return
	}
	fast, slow := d.clone(), d.clone()
	coerceCustomMeta(fast)
	coerceCustomMetaSlow(slow)
	for _, k := range slices.Sorted(maps.Keys(fast.meta)) {
		if s, ok := slow.meta[k]; !ok || string(fast.meta[k]) != string(s) {
			t.Errorf("metadata %s: %s is %s, want %s (present %v)", m, k, fast.meta[k], s, ok)
		}
	}
	for k := range slow.meta {
		if _, ok := fast.meta[k]; !ok {
			t.Errorf("metadata %s: %s is gone, want %s", m, k, slow.meta[k])
		}
	}
}

// TestCoerceCustomMetaAllocs: metadata already coerced, an update's after
// admission with its managed fields (as setManagedFields writes them, and
// as stored), is coerced without decoding and comparing every field's
// coerced value (some 500 allocations, twice on every write of a custom
// resource; about 100).
func TestCoerceCustomMetaAllocs(t *testing.T) {
	for _, m := range []string{benchStoredGadgetMeta, benchStoredGadgetMetaSorted} {
		d, err := decodeDoc([]byte(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":` + m + `}`))
		if err != nil {
			t.Fatal(err)
		}
		coerceCustomMeta(d)
		want := d.clone()
		if n := testing.AllocsPerRun(20, func() { coerceCustomMeta(d) }); n > 200 {
			t.Errorf("coerceCustomMeta of %s: %v allocations, want at most 200", m, n)
		}
		if !maps.EqualFunc(d.meta, want.meta, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Errorf("coerceCustomMeta changed coerced metadata %s", m)
		}
	}
}
