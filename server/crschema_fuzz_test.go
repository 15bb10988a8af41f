package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// schemaGen turns fuzz bytes into a JSON schema (as a map) of bounded
// depth: every type, defaults, enums, bounds, lengths, patterns,
// nullable, int-or-string, preserve-unknown-fields, embedded resources
// and list types.
type schemaGen struct {
	b []byte
	i int
}

func (g *schemaGen) next() int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1])
}

func (g *schemaGen) value(typ string) any {
	switch g.next() % 6 {
	case 0:
		return nil
	case 1:
		return "x"
	case 2:
		return int64(g.next() % 20)
	case 3:
		return true
	case 4:
		return map[string]any{"a": "y"}
	}
	switch typ {
	case "string":
		return "ab"
	case "integer":
		return int64(3)
	case "number":
		return 1.5
	case "boolean":
		return false
	case "array":
		return []any{}
	}
	return map[string]any{}
}

func (g *schemaGen) schema(depth int) map[string]any {
	types := []string{"object", "array", "string", "integer", "number", "boolean"}
	typ := types[g.next()%len(types)]
	if depth >= 3 && (typ == "object" || typ == "array") {
		typ = "string"
	}
	s := map[string]any{"type": typ}
	flags := g.next()
	switch typ {
	case "object":
		switch g.next() % 4 {
		case 0:
			s["additionalProperties"] = g.schema(depth + 1)
		default:
			props := map[string]any{}
			for _, n := range []string{"a", "b", "c"}[:1+g.next()%3] {
				props[n] = g.schema(depth + 1)
			}
			s["properties"] = props
			if flags&1 != 0 {
				s["required"] = []any{"a"}
			}
		}
		if flags&2 != 0 {
			s["x-kubernetes-preserve-unknown-fields"] = true
		}
		if flags&4 != 0 {
			s["x-kubernetes-embedded-resource"] = true
			s["x-kubernetes-preserve-unknown-fields"] = true
		}
		if flags&8 != 0 {
			s["maxProperties"] = int64(g.next() % 4)
		}
	case "array":
		items := g.schema(depth + 1)
		s["items"] = items
		switch g.next() % 4 {
		case 1:
			s["x-kubernetes-list-type"] = "set"
		case 2:
			if items["type"] == "object" {
				if p, ok := items["properties"].(map[string]any); ok {
					if a, ok := p["a"].(map[string]any); ok && (a["type"] == "string" || a["type"] == "integer") {
						s["x-kubernetes-list-type"] = "map"
						s["x-kubernetes-list-map-keys"] = []any{"a"}
						items["required"] = []any{"a"}
					}
				}
			}
		case 3:
			s["x-kubernetes-list-type"] = "atomic"
		}
		if flags&8 != 0 {
			s["maxItems"] = int64(g.next() % 4)
		}
	case "string":
		if flags&1 != 0 {
			s["enum"] = []any{"ab", "cd"}
		}
		if flags&2 != 0 {
			s["maxLength"] = int64(g.next() % 5)
		}
		if flags&4 != 0 {
			s["pattern"] = "^[a-c]*$"
		}
		if flags&8 != 0 {
			s["format"] = []string{"date-time", "int32", "byte", "uuid"}[g.next()%4]
		}
	case "integer", "number":
		if flags&1 != 0 {
			s["minimum"] = int64(g.next() % 3)
		}
		if flags&2 != 0 {
			s["maximum"] = int64(5 + g.next()%3)
		}
		if flags&4 != 0 && typ == "integer" && depth > 0 {
			delete(s, "type")
			delete(s, "minimum")
			delete(s, "maximum")
			s["x-kubernetes-int-or-string"] = true
		}
	}
	if flags&16 != 0 {
		s["nullable"] = true
	}
	if flags&32 != 0 && depth > 1 {
		s["default"] = g.value(typ)
	}
	return s
}

// fuzzCRSchema builds the crSchema of a random schema, if kube's CRD
// validation accepts the CRD holding it.
func fuzzCRSchema(seed []byte) (*crSchema, bool) {
	g := &schemaGen{b: seed}
	root := map[string]any{"type": "object", "properties": map[string]any{"spec": g.schema(1)}}
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "things.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": root}}}},
	})
	if err != nil {
		return nil, false
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(raw, crd); err != nil {
		return nil, false
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return nil, false
	}
	internal.Status.StoredVersions = []string{"v1"}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		return nil, false
	}
	cs, err := newCRSchema(crd, "v1", "Thing", true, true, nil)
	if err != nil || cs == nil {
		panic(fmt.Sprintf("a CRD kube accepts is not served: %v\n%s", err, raw))
	}
	return cs, true
}

// FuzzCustomResourceSchema: random objects against random structural
// schemas that kube's CRD validation accepts. Pruning, defaulting and
// kube's validation never panic; pruning is complete (a second pass finds
// nothing unknown); and an object accepted is read back from storage as
// it was stored.
func FuzzCustomResourceSchema(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 3}, `{"spec":{"a":"ab","b":1,"z":true}}`)
	f.Add([]byte{1, 0, 0, 3, 0, 255, 2}, `{"spec":["ab","ab"]}`)
	f.Add([]byte{0, 0, 0, 2, 0, 1, 3, 32, 4}, `{"spec":{"a":{"b":null}}}`)
	f.Add([]byte{0, 7, 1, 1, 0, 3, 33, 5, 2, 1, 2}, `{"spec":{"a":[{"a":"x"},{"a":"x","q":1}]}}`)
	f.Fuzz(func(t *testing.T, seed []byte, obj string) {
		cs, ok := fuzzCRSchema(seed)
		if !ok {
			return
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(obj)); err != nil {
			var m map[string]any
			if json.Unmarshal([]byte(obj), &m) != nil {
				return
			}
			u.Object = runtime.DeepCopyJSON(map[string]any{"spec": m["spec"]})
		}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Thing")
		u.SetName("t")
		u.SetNamespace("default")
		u.SetGeneration(1)
		if _, err := cs.coerce(u.Object); err != nil {
			return // kube's 400
		}
		once := runtime.DeepCopyJSON(u.Object)
		if unknown, err := cs.coerce(u.Object); err != nil || len(unknown) > 0 {
			t.Fatalf("a pruned object still has unknown fields %v (%v): %v", unknown, err, once)
		}
		ctx := context.Background()
		if errs := cs.strategy.Validate(ctx, u); len(errs) > 0 {
			return // kube's 422
		}
		_ = cs.strategy.ValidateUpdate(ctx, u.DeepCopy(), u)
		_ = cs.statusStrategy.ValidateUpdate(ctx, u.DeepCopy(), u)
		stored, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := cs.readStored(stored); string(got) != string(stored) {
			t.Fatalf("an accepted object reads back changed:\nstored %s\nread   %s", stored, got)
		}
	})
}
