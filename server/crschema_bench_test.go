package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// benchGadgetCRD is gadgetCRD with schema (gadgetSchema, or one that
// preserves everything and states nothing).
func benchGadgetCRD(b *testing.B, schema string) []byte {
	var s any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		b.Fatal(err)
	}
	crd, _ := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": s}}}},
	})
	return crd
}

const benchGadgets = "/apis/example.com/v1/namespaces/bench/gadgets"

const benchSchemaless = `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`

// benchGadgetSpec is a realistic object: most of gadgetSchema's fields.
const benchGadgetSpec = `{"name":"bench","mode":"slow","replicas":3,"ratio":1.5,"when":"2026-01-01T00:00:00Z","port":"http",` +
	`"tags":["a","b"],"ports":[{"name":"http","port":80},{"name":"grpc","port":9090}],"labels":{"team":"x"},` +
	`"extra":{"free":{"form":[1,2,3]}},"fixed":"one"}`

func benchPost(b *testing.B, url string, body []byte) {
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("POST %s: %d", url, resp.StatusCode)
	}
}

// BenchmarkCreateCustomResource creates custom resources one at a time,
// with gadgetSchema (pruning, defaults, OpenAPI and CEL validation) and
// with a schema that states nothing, for the cost of schemas on writes.
func BenchmarkCreateCustomResource(b *testing.B) {
	for _, tc := range []struct{ name, schema string }{{"schemaless", benchSchemaless}, {"schema", gadgetSchema}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newBenchEnv(b)
			benchPost(b, e.url+crdPath, benchGadgetCRD(b, tc.schema))
			benchPost(b, e.url+"/api/v1/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}`))
			b.ReportAllocs()
			start := cpuTime()
			i := 0
			for b.Loop() {
				benchPost(b, e.url+benchGadgets, []byte(gadget(fmt.Sprintf("g-%d", i), benchGadgetSpec)))
				i++
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkListCustomResources lists 500 custom resources: with
// gadgetSchema every object read is pruned and defaulted on the way out
// (as kube's storage decoder does), without one it is sent as stored.
func BenchmarkListCustomResources(b *testing.B) {
	for _, tc := range []struct{ name, schema string }{{"schemaless", benchSchemaless}, {"schema", gadgetSchema}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newBenchEnv(b)
			benchPost(b, e.url+crdPath, benchGadgetCRD(b, tc.schema))
			benchPost(b, e.url+"/api/v1/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}`))
			for i := range 500 {
				benchPost(b, e.url+benchGadgets, []byte(gadget(fmt.Sprintf("g-%d", i), benchGadgetSpec)))
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Get(e.url + benchGadgets)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkReadStoredObject is the cost of kube's storage decoding of one
// stored custom resource with gadgetSchema, the first time it is read
// ("decode") and when it is remembered as needing nothing ("cached").
func BenchmarkReadStoredObject(b *testing.B) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(benchGadgetCRD(b, gadgetSchema), crd); err != nil {
		b.Fatal(err)
	}
	cs, err := newCRSchema(crd, "v1", "Gadget", true, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	d, err := decodeDoc([]byte(gadget("g", benchGadgetSpec)))
	if err != nil {
		b.Fatal(err)
	}
	u, _ := toUnstructured(d)
	_, _ = cs.coerce(u.Object)
	stored, _ := u.MarshalJSON()
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cs.unchanged = readCache{}
			_ = cs.readStored(stored)
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = cs.readStored(stored)
		}
	})
}
