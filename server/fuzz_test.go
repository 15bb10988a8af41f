package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// FuzzDecodeDoc: a body either is refused with a 400 Status, or decodes
// into a doc whose canonical encoding is a JSON object that starts with
// apiVersion, kind, metadata, has no resourceVersion, keeps every other
// field's meaning, and accepts storage's resourceVersion splice.
func FuzzDecodeDoc(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"3"},"data":{"k":"v"}}`))
	f.Add([]byte(`{"metadata":null,"spec":[1,2,{"x":"\u003c"}]}`))
	f.Add([]byte(`{"kind":1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"metadata":{"labels":{"a":"b"}},"zzz":true,"aaa":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := decodeDoc(body)
		if err != nil {
			var st *wire.Status
			if !errors.As(err, &st) || st.Code != 400 {
				t.Fatalf("refusal is not a 400 Status: %v", err)
			}
			return
		}
		out := d.encode()
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("encoding %q is not JSON: %v", out, err)
		}
		md, _ := got["metadata"].(map[string]any)
		if md == nil {
			t.Fatalf("no metadata object in %s", out)
		}
		if _, ok := md["resourceVersion"]; ok {
			t.Fatalf("resourceVersion kept in %s", out)
		}
		var in map[string]any
		_ = json.Unmarshal(body, &in)
		for k, v := range in {
			if k == "metadata" || k == "apiVersion" || k == "kind" {
				continue
			}
			a, _ := json.Marshal(v)
			b, _ := json.Marshal(got[k])
			if string(a) != string(b) {
				t.Fatalf("field %s changed: %s -> %s", k, a, b)
			}
		}
		if _, err := storage.WithResourceVersion(out, 9); err != nil {
			t.Fatalf("splice refused %s: %v", out, err)
		}
	})
}

// FuzzNegotiate: any Accept header yields JSON, Table or partial output,
// or a 406, the same as kube's parsing would; protobuf only for a built-in
// kind (or partial metadata), a Table never in protobuf; and
// "…, application/json" at the end always succeeds.
func FuzzNegotiate(f *testing.F) {
	f.Add(tableAccept)
	f.Add("application/vnd.kubernetes.protobuf")
	f.Add("application/vnd.kubernetes.protobuf, application/json")
	f.Add("application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json;q=0.5")
	f.Add("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
	f.Add("*/*;q=0")
	builtin := builtinResources()[1]
	cr := &resource{version: "v1", plural: "foos", kind: "Foo", listKind: "FooList", group: "example.com", crd: "foos.example.com", namespaced: true}
	f.Fuzz(func(t *testing.T, accept string) {
		for _, r := range []*resource{builtin, cr} {
			out, err := negotiate(accept, r)
			if err != nil {
				var st *wire.Status
				if !errors.As(err, &st) || st.Code != 406 {
					t.Fatalf("refusal is not a 406: %v", err)
				}
			} else {
				if out.form == formTable && (out.proto || out.metaVersion != "v1" && out.metaVersion != "v1beta1") {
					t.Fatalf("table %+v", out)
				}
				if out.proto && r.crd != "" && out.form != formPartial {
					t.Fatalf("protobuf for a custom resource: %q", accept)
				}
				if out.yaml && (out.proto || !strings.Contains(accept, "yaml") && !strings.Contains(accept, "*")) {
					t.Fatalf("YAML for %q: %+v", accept, out)
				}
			}
			if _, err := negotiate(accept+",application/json", r); err != nil {
				t.Fatalf("json fallback refused for %q: %v", accept, err)
			}
			// Spaces around a type's parts are trimmed, as kube's parser
			// (goautoneg) trims them: "application /yaml" is YAML.
			spelled := strings.NewReplacer(" ", "", "\t", "").Replace(accept)
			if mt := errorMedia(accept); mt != mediaJSON && !strings.Contains(spelled, mt) && !strings.Contains(accept, "*") {
				t.Fatalf("%s Status for %q", mt, accept)
			}
		}
	})
}

// BenchmarkDecodeDoc decodes a ~1 KiB ConfigMap as a create body is.
func BenchmarkDecodeDoc(b *testing.B) {
	data := map[string]string{}
	for i := range 16 {
		data[fmt.Sprintf("key-%02d", i)] = strings.Repeat("v", 48)
	}
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "bench", "namespace": "default", "labels": map[string]string{"app": "bench", "tier": "x"}, "annotations": map[string]string{"a": "b"}},
		"data":     data,
	})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeDoc(body); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzTypeMetaEnd: where typeMetaEnd cuts an object's JSON, "{" and the
// rest are the same object without apiVersion and kind, both strings
// before the cut.
func FuzzTypeMetaEnd(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment"}`))
	f.Add([]byte(`{"apiVersion":"v\"1","kind":"X","a":1}`))
	f.Add([]byte(`{"kind":"X","apiVersion":"v1","a":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := typeMetaEnd(b)
		var whole map[string]any
		valid := json.Unmarshal(b, &whole) == nil
		if n == 0 {
			return
		}
		cut := append([]byte{'{'}, b[n:]...)
		if !valid {
			return
		}
		var rest map[string]any
		if err := json.Unmarshal(cut, &rest); err != nil {
			t.Fatalf("cut %q of %q: %v", cut, b, err)
		}
		if _, ok := whole["apiVersion"].(string); !ok {
			t.Fatalf("cut %q without a string apiVersion", b)
		}
		if _, ok := whole["kind"].(string); !ok {
			t.Fatalf("cut %q without a string kind", b)
		}
		if _, dup := rest["apiVersion"]; dup {
			return // a duplicate key: the last one won in whole
		}
		if _, dup := rest["kind"]; dup {
			return
		}
		delete(whole, "apiVersion")
		delete(whole, "kind")
		if !reflect.DeepEqual(whole, rest) {
			t.Fatalf("cut %q of %q: %v, want %v", cut, b, rest, whole)
		}
	})
}
