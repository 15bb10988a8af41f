package informer

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/listwatch/listwatch/object"
)

const dedupPodA = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","uid":"u1","labels":{"app":"web","tier":"fe"},
"managedFields":[{"manager":"kcm","fieldsV1":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}]},
"spec":{"containers":[{"name":"app","image":"reg/web:v1","ports":[{"containerPort":8080}]}]},"status":{"podIP":"10.0.0.1","ready":true,"n":1.5}}`

const dedupPodB = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","uid":"u2","labels":{"tier":"fe","app":"web"},
"managedFields":[{"manager":"kcm","fieldsV1":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}]},
"spec":{"containers":[{"name":"app","image":"reg/web:v1","ports":[{"containerPort":8080}]}]},"status":{"podIP":"10.0.0.2","ready":true,"n":1.5}}`

func decodeU(t testing.TB, s string) *object.Unstructured {
	t.Helper()
	u := &object.Unstructured{}
	if err := json.Unmarshal([]byte(s), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func mapPtr(m any) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }

// TestDedupUnstructuredSharesEqualSubtrees: equal subtrees of two objects
// become one, and both objects keep exactly their values.
func TestDedupUnstructuredSharesEqualSubtrees(t *testing.T) {
	d := newDeduper(DefaultDedupEntries)
	a, b := decodeU(t, dedupPodA), decodeU(t, dedupPodB)
	a = dedupObject(d, a)
	b = dedupObject(d, b)
	if !reflect.DeepEqual(a.Object, decodeU(t, dedupPodA).Object) || !reflect.DeepEqual(b.Object, decodeU(t, dedupPodB).Object) {
		t.Fatal("dedup changed a value")
	}
	ma, _ := a.Nested("metadata", "managedFields")
	mb, _ := b.Nested("metadata", "managedFields")
	if &ma.([]any)[0] != &mb.([]any)[0] {
		t.Error("equal managedFields not shared")
	}
	la, _ := a.Nested("metadata", "labels")
	lb, _ := b.Nested("metadata", "labels")
	if mapPtr(la) != mapPtr(lb) {
		t.Error("equal labels (in another order) not shared")
	}
	sa, _ := a.Nested("status")
	sb, _ := b.Nested("status")
	if mapPtr(sa) == mapPtr(sb) {
		t.Error("different statuses shared")
	}
}

type dedupTestMeta struct {
	Name          string
	Labels        map[string]string
	ManagedFields []dedupTestEntry
	Ptr           *dedupTestEntry
	unexported    string
}

type dedupTestEntry struct {
	Manager string
	Raw     []byte
}

// TestDedupTypedSharesStringsMapsAndBytes: a typed object's strings,
// string maps and byte slices equal to earlier ones are shared; values
// are unchanged; unexported fields are left alone.
func TestDedupTypedSharesStringsMapsAndBytes(t *testing.T) {
	mk := func(name string) *dedupTestMeta {
		return &dedupTestMeta{
			Name: name, Labels: map[string]string{"app": string([]byte("web"))},
			ManagedFields: []dedupTestEntry{{Manager: string([]byte("kcm")), Raw: []byte(`{"f:spec":{}}`)}},
			Ptr:           &dedupTestEntry{Manager: string([]byte("kubelet"))},
			unexported:    string([]byte("not shared")),
		}
	}
	d := newDeduper(DefaultDedupEntries)
	a, b := mk("a"), mk("b")
	d.typed(reflect.ValueOf(a).Elem())
	d.typed(reflect.ValueOf(b).Elem())
	want := mk("b")
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("dedup changed a value: %+v", b)
	}
	if mapPtr(a.Labels) != mapPtr(b.Labels) {
		t.Error("equal labels not shared")
	}
	if &a.ManagedFields[0].Raw[0] != &b.ManagedFields[0].Raw[0] {
		t.Error("equal bytes not shared")
	}
	if unsafe.StringData(a.ManagedFields[0].Manager) != unsafe.StringData(b.ManagedFields[0].Manager) ||
		unsafe.StringData(a.Ptr.Manager) != unsafe.StringData(b.Ptr.Manager) {
		t.Error("equal strings not shared")
	}
	if &a.ManagedFields[0] != &b.ManagedFields[0] || a.Ptr != b.Ptr {
		t.Error("equal slices of structs, or equal pointed-to structs, not shared")
	}
	c := mk("c")
	c.Ptr.Manager = "other"
	d.typed(reflect.ValueOf(c).Elem())
	if c.Ptr == a.Ptr || c.Ptr.Manager != "other" {
		t.Error("different pointed-to structs shared")
	}
	if unsafe.StringData(a.unexported) == unsafe.StringData(b.unexported) {
		t.Error("an unexported field was written")
	}
}

// TestDedupTablesAreBounded: past maxEntries the tables start afresh.
func TestDedupTablesAreBounded(t *testing.T) {
	d := newDeduper(10)
	for range 5 {
		dedupObject(d, decodeU(t, dedupPodA))
		dedupObject(d, decodeU(t, dedupPodB))
		if n := len(d.strs) + len(d.nodes); n > 10+60 {
			t.Fatalf("tables hold %d entries, bound 10 (+ one object)", n)
		}
	}
}

// FuzzDedupPreservesValue: whatever JSON object is decoded, dedup leaves
// its value unchanged, also after other objects filled the tables.
func FuzzDedupPreservesValue(f *testing.F) {
	f.Add(dedupPodA)
	f.Add(dedupPodB)
	f.Add(`{"a":[{},{},[],[[]],{"b":null}],"c":"d","e":1e400,"f":-0}`)
	d := newDeduper(1000)
	dedupObject(d, decodeU(f, dedupPodA))
	f.Fuzz(func(t *testing.T, s string) {
		u := &object.Unstructured{}
		if json.Unmarshal([]byte(s), u) != nil {
			return
		}
		ref := &object.Unstructured{}
		_ = json.Unmarshal([]byte(s), ref)
		got := dedupObject(d, u)
		if !reflect.DeepEqual(got.Object, ref.Object) {
			t.Fatalf("dedup changed %s", s)
		}
		again := &object.Unstructured{}
		_ = json.Unmarshal([]byte(s), again)
		if got := dedupObject(d, again); !reflect.DeepEqual(got.Object, ref.Object) {
			t.Fatalf("second dedup changed %s", s)
		}
	})
}

type dedupCycle struct {
	Name string
	Next *dedupCycle
}

// TestDedupTypedCycleEnds: a type whose pointers form a cycle is walked
// to a bounded depth, not forever.
func TestDedupTypedCycleEnds(t *testing.T) {
	a := &dedupCycle{Name: "a"}
	a.Next = a
	d := newDeduper(DefaultDedupEntries)
	d.typed(reflect.ValueOf(a).Elem())
	if a.Next != a || a.Name != "a" {
		t.Fatal("cycle changed")
	}
}

// TestDedupUnstructuredCyclesAndJoinsEnd: an Unstructured whose maps
// refer to themselves, or join again below (2^40 paths through 40 maps),
// which only a program builds, is shared within bounds and unchanged.
func TestDedupUnstructuredCyclesAndJoinsEnd(t *testing.T) {
	self := map[string]any{"name": "self"}
	self["self"] = self
	var dag any = "leaf"
	for i := range 40 {
		dag = map[string]any{"i": int64(i), "l": dag, "r": dag}
	}
	d := newDeduper(DefaultDedupEntries)
	u := &object.Unstructured{Object: map[string]any{"a": self, "b": dag}}
	dedupObject(d, u)
	got := u.Object["a"].(map[string]any)
	for range maxDedupDepth + 2 {
		if got["name"] != "self" {
			t.Fatal("cycle changed")
		}
		got = got["self"].(map[string]any)
	}
	n := u.Object["b"]
	for i := 39; i >= 0; i-- {
		m := n.(map[string]any)
		if m["i"] != int64(i) {
			t.Fatalf("level %d changed: %v", i, m["i"])
		}
		n = m["l"]
	}
	if n != "leaf" {
		t.Fatalf("leaf changed: %v", n)
	}
}

// TestDedupUnstructuredNegativeZero: -0 and 0, equal to ==, are not
// shared with each other (a program, not a JSON decoder, puts floats in
// an Unstructured).
func TestDedupUnstructuredNegativeZero(t *testing.T) {
	d := newDeduper(DefaultDedupEntries)
	a := &object.Unstructured{Object: map[string]any{"x": map[string]any{"v": 0.0}}}
	b := &object.Unstructured{Object: map[string]any{"x": map[string]any{"v": math.Copysign(0, -1)}}}
	dedupObject(d, a)
	dedupObject(d, b)
	if v := b.Object["x"].(map[string]any)["v"].(float64); !math.Signbit(v) {
		t.Fatal("-0 became 0")
	}
}

// TestDedupUnstructuredForeignValues: values no JSON decoder produces
// (a []string, a map[string]string, a struct) are kept as they are and
// never compared with == where that would panic.
func TestDedupUnstructuredForeignValues(t *testing.T) {
	mk := func() *object.Unstructured {
		return &object.Unstructured{Object: map[string]any{
			"list": []string{"a", "b"}, "m": map[string]string{"k": "v"},
			"s": struct{ X []int }{X: []int{1}}, "nested": []any{[]string{"c"}},
		}}
	}
	d := newDeduper(DefaultDedupEntries)
	a := dedupObject(d, mk())
	b := dedupObject(d, mk())
	if !reflect.DeepEqual(a.Object, mk().Object) || !reflect.DeepEqual(b.Object, mk().Object) {
		t.Fatal("dedup changed a value")
	}
}

// DedupTestObjectMeta has what makes a struct an object's metadata to the
// deduper (UID, ResourceVersion and Namespace), as k8s.io/api's
// ObjectMeta does, and is embedded as ObjectMeta is (an exported type: the
// deduper leaves unexported fields alone); dedupTestOwner, like an
// OwnerReference, has a UID only.
type DedupTestObjectMeta struct {
	Name, Namespace, UID, ResourceVersion string
	Labels                                map[string]string
	OwnerReferences                       []dedupTestOwner
}

type dedupTestOwner struct {
	Kind, Name, UID string
}

type dedupTestObject struct {
	DedupTestObjectMeta
	Image string
}

// TestDedupLeavesObjectIdentityOut: an object's own name, UID and
// resourceVersion are not remembered in the tables (no other object
// repeats them), while its owner's name and UID, which its siblings
// repeat, are; values are unchanged.
func TestDedupLeavesObjectIdentityOut(t *testing.T) {
	mk := func(i int) *dedupTestObject {
		return &dedupTestObject{
			DedupTestObjectMeta: DedupTestObjectMeta{Name: fmt.Sprint("pod-", i), Namespace: "ns", UID: fmt.Sprint("uid-", i),
				ResourceVersion: fmt.Sprint(100 + i), Labels: map[string]string{"app": "web"},
				OwnerReferences: []dedupTestOwner{{Kind: "ReplicaSet", Name: string([]byte("rs-1")), UID: string([]byte("rs-uid"))}}},
			Image: string([]byte("registry.example/app:v1")),
		}
	}
	d := newDeduper(DefaultDedupEntries)
	a, b := mk(0), mk(1)
	d.typed(reflect.ValueOf(a).Elem())
	d.typed(reflect.ValueOf(b).Elem())
	if !reflect.DeepEqual(a, mk(0)) || !reflect.DeepEqual(b, mk(1)) {
		t.Fatalf("dedup changed a value: %+v %+v", a, b)
	}
	for _, s := range []string{a.Name, a.UID, a.ResourceVersion, b.Name, b.UID, b.ResourceVersion} {
		if _, ok := d.strs[s]; ok {
			t.Errorf("an object's own %q is remembered", s)
		}
	}
	for _, s := range []string{"rs-1", "rs-uid", "registry.example/app:v1"} {
		if _, ok := d.strs[s]; !ok {
			t.Errorf("%q, which siblings repeat, is not shared", s)
		}
	}
	if unsafe.StringData(a.OwnerReferences[0].Name) != unsafe.StringData(b.OwnerReferences[0].Name) ||
		unsafe.StringData(a.Image) != unsafe.StringData(b.Image) {
		t.Error("equal strings not shared")
	}
}
