package storage

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// attrsWhole is DefaultAttrs decoding the whole value, as it does when
// the metadata cannot be found by scanning.
func attrsWhole(value []byte) (labels, fields map[string]string, err error) {
	var obj wire.PartialObject
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, nil, err
	}
	return obj.Metadata.Labels, map[string]string{
		"metadata.name": obj.Metadata.Name, "metadata.namespace": obj.Metadata.Namespace}, nil
}

var attrsCases = []string{
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","labels":{"x":"1"}},"data":{"k":"v"}}`,
	`{"metadata":{"name":"a"},"spec":{"metadata":{"name":"inner"}}}`,
	`{"metadata":{"name":"first"},"metadata":{"name":"last"}}`,
	`{"metadata":{"name":"first"},"Metadata":{"name":"folded"}}`,
	`{"METADATA":{"name":"folded"},"metadata":{"name":"last"}}`,
	`{"meta\u0064ata":{"name":"escaped"}}`,
	`{"metadata":{"name":"a","Name":"b","LABELS":{"y":"2"}}}`,
	`{"metadata":null}`,
	`{"metadata":{"labels":{"x":1}}}`,
	`{}`,
	` { "metadata" : { "name" : "spaced" } , "x" : [ 1 , "}" ] } `,
}

// TestDefaultAttrs: scanning for the metadata gives what decoding the
// whole value gives.
func TestDefaultAttrs(t *testing.T) {
	for _, c := range attrsCases {
		checkAttrs(t, []byte(c))
	}
	if _, ok := metadataValue([]byte(attrsCases[0])); !ok {
		t.Fatal("the metadata of a stored value was not found by scanning")
	}
}

func checkAttrs(t *testing.T, value []byte) {
	t.Helper()
	gl, gf, gerr := DefaultAttrs(value)
	if !json.Valid(value) {
		return // the server stores only valid JSON; never a panic
	}
	wl, wf, werr := attrsWhole(value)
	if werr != nil {
		// Only a type error outside name, namespace and labels (which
		// the scan does not decode) may be read where the whole is not.
		if gerr == nil {
			if _, ok := metadataValue(value); !ok {
				t.Errorf("%s: read as %v %v, the whole fails: %v", value, gl, gf, werr)
			}
		}
		return
	}
	if gerr != nil || !maps.Equal(gl, wl) || !maps.Equal(gf, wf) || (gl == nil) != (wl == nil) {
		t.Errorf("%s:\ngot  %v %v %v\nwant %v %v", value, gl, gf, gerr, wl, wf)
	}
}

// FuzzDefaultAttrs: for any valid JSON value, DefaultAttrs gives what
// decoding it whole gives; for any value it never panics.
func FuzzDefaultAttrs(f *testing.F) {
	for _, c := range attrsCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		checkAttrs(t, value)
	})
}

// BenchmarkDefaultAttrs: a ~1 KiB ConfigMap as the server stores it,
// scanned for its metadata and decoded whole.
func BenchmarkDefaultAttrs(b *testing.B) {
	data := map[string]string{}
	for i := range 16 {
		data[string(rune('a'+i))+"-key"] = "some configuration value of about fifty bytes, quoted"
	}
	v, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm-1", "namespace": "bench", "uid": "4b4b6a5c-1f0e-4d8e-9f5e-0f6f2a9d8c11",
			"labels": map[string]string{"app": "bench"}, "creationTimestamp": "2026-12-03T04:05:06Z"},
		"data": data})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		fn   AttrFunc
	}{{"scan", DefaultAttrs}, {"whole", attrsWhole}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := bc.fn(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
