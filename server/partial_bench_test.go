package server

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkPartialObjectCustom is a custom resource (a spec of about 4
// KiB) made a PartialObjectMetadata, as a metadata-only informer lists
// and watches it.
func BenchmarkPartialObjectCustom(b *testing.B) {
	spec := `{"items":[` + strings.Repeat(`{"name":"x","values":[1,2,3],"nested":{"a":"b","c":{"d":true}}},`, 60) + `{}]}`
	v := []byte(fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"creationTimestamp":"2026-12-06T10:00:00Z","generation":1,"labels":{"a":"b","c":"d"},"managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:items":{}}},"manager":"kubectl","operation":"Update","time":"2026-12-06T10:00:00Z"}],"name":"g","namespace":"ns","resourceVersion":"42","uid":"0b3c6f0e-9b1e-4f2a-8f57-6a1c1a7b2f11"},"spec":%s}`, spec))
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := partialObject(v, "meta.k8s.io/v1"); err != nil {
			b.Fatal(err)
		}
	}
}
