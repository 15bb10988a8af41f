package storage

import (
	"strings"
	"testing"
)

// benchValues are stored values of the three shapes WithResourceVersion
// meets: a built-in object in kube's typed order, a custom resource
// (encoding/json of its map) and a built-in object an earlier serve
// stored (apiVersion first, metadata's members by name), each with a
// managed fields entry and 1 KiB of data.
var benchValues = func() map[string][]byte {
	pad := strings.Repeat("x", 1024)
	mf := `[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:pad":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}}]`
	return map[string][]byte{
		"typed":  []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-000001","namespace":"ns-1","uid":"6a1c2f4e-0000-4000-8000-000000000001","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"bench"},"managedFields":` + mf + `},"data":{"pad":"` + pad + `"}}`),
		"custom": []byte(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"bench"},"managedFields":` + mf + `,"name":"cm-000001","namespace":"ns-1","uid":"6a1c2f4e-0000-4000-8000-000000000001"},"spec":{"pad":"` + pad + `"}}`),
		"old":    []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"bench"},"managedFields":` + mf + `,"name":"cm-000001","namespace":"ns-1","uid":"6a1c2f4e-0000-4000-8000-000000000001"},"data":{"pad":"` + pad + `"}}`),
	}
}()

func BenchmarkWithResourceVersion(b *testing.B) {
	for _, shape := range []string{"typed", "custom", "old"} {
		v := benchValues[shape]
		b.Run(shape, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := WithResourceVersion(v, 123456789); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSetResourceVersion(b *testing.B) {
	for _, shape := range []string{"typed", "custom", "old"} {
		v, err := WithResourceVersion(benchValues[shape], 123456789)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(shape, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := SetResourceVersion(v, 123456790); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
