package informer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"unsafe"
)

// The types below have every kind the typed walker handles: strings,
// numbers of each width (floats compared by bits: -0 is not 0), named
// string maps, maps of structs and of pointers, maps whose values hold
// maps of their own type, slices of structs and of pointers, arrays,
// byte slices, interfaces, unexported fields, an embedded struct.

type fuzzName string

type fuzzQuantity struct {
	Format string
	value  int64 // unexported: read, never written
	s      string
}

type fuzzLeaf struct {
	S   string
	I8  int8
	U16 uint16
	I32 int32
	F32 float32
	F64 float64
	B   bool
	Raw []byte
	Any any
	Arr [2]string
	P   *string
}

type fuzzNode struct {
	fuzzLeaf
	Labels   map[string]string
	Named    map[fuzzName]string
	Quants   map[fuzzName]fuzzQuantity
	Children map[string]fuzzNode
	Ptrs     map[string]*fuzzLeaf
	List     []fuzzLeaf
	PList    []*fuzzLeaf
	Strs     []string
	Next     *fuzzNode
}

// UnmarshalJSON fills the quantities' unexported fields from their
// Format, as a decoder of resource.Quantity would.
func (q *fuzzQuantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*q = fuzzQuantity{Format: s, value: int64(len(s)), s: s + "!"}
	return nil
}

func (q fuzzQuantity) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{q.Format, q.value, q.s})
}

func decodeFuzzNode(t testing.TB, s string) (*fuzzNode, bool) {
	n := &fuzzNode{}
	if json.Unmarshal([]byte(s), n) != nil {
		return nil, false
	}
	return n, true
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const fuzzNodeA = `{"S":"a","F64":-0,"F32":1.5,"Raw":"eyJhIjoxfQ==","Arr":["x","y"],"P":"p",
"Labels":{"app":"web"},"Named":{"cpu":"1"},"Quants":{"cpu":"100m","memory":"1Gi"},
"Children":{"c":{"S":"c","Labels":{"app":"web"},"Children":{"d":{"S":"d"}}}},
"Ptrs":{"x":{"S":"leaf"}},"List":[{"S":"l","Arr":["x","y"]},{"S":"l","Arr":["x","y"]}],
"PList":[{"S":"l"},{"S":"l"},null],"Strs":["a","a",""],"Next":{"S":"a","F64":0}}`

// FuzzDedupTypedPreservesValue: whatever a typed object holds, sharing
// leaves its value unchanged (compared as JSON, so that -0 and 0 differ,
// and with unexported fields), also after other objects filled the
// tables, and shares equal parts of two equal objects.
func FuzzDedupTypedPreservesValue(f *testing.F) {
	f.Add(fuzzNodeA)
	f.Add(`{"F64":0,"List":[{"F64":-0},{"F64":0}],"Quants":{"a":"1","b":"1"}}`)
	f.Add(`{"Any":{"x":1},"PList":[{"Any":null},{"Any":null}],"Children":{"a":{},"b":{}}}`)
	d := newDeduper(1000)
	seed, _ := decodeFuzzNode(f, fuzzNodeA)
	d.typed(reflect.ValueOf(seed).Elem())
	seedJSON := mustJSON(f, seed)
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := decodeFuzzNode(t, s)
		if !ok {
			return
		}
		ref, _ := decodeFuzzNode(t, s)
		b, _ := decodeFuzzNode(t, s)
		d.typed(reflect.ValueOf(a).Elem())
		d.typed(reflect.ValueOf(b).Elem())
		want := mustJSON(t, ref)
		for _, got := range []*fuzzNode{a, b} {
			if g := mustJSON(t, got); !bytes.Equal(g, want) || !reflect.DeepEqual(got, ref) {
				t.Fatalf("sharing changed %s:\n got %s\nwant %s", s, g, want)
			}
		}
		// Objects shared earlier keep their values too.
		if g := mustJSON(t, seed); !bytes.Equal(g, seedJSON) {
			t.Fatalf("sharing %s changed an earlier object:\n got %s\nwant %s", s, g, seedJSON)
		}
		if len(a.List) > 0 && &a.List[0] != &b.List[0] {
			t.Errorf("equal slices of structs not shared: %s", s)
		}
		if a.Labels != nil && reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
			t.Errorf("equal labels not shared: %s", s)
		}
	})
}

// TestDedupTypedMapsOfStructs: maps whose values are structs (as a
// container's resource requests) are shared when equal, not when a value
// differs only in an unexported field or in a float's sign.
func TestDedupTypedMapsOfStructs(t *testing.T) {
	d := newDeduper(DefaultDedupEntries)
	mk := func() *fuzzNode {
		n, ok := decodeFuzzNode(t, `{"Quants":{"cpu":"100m"},"List":[{"F64":0}],"Children":{"c":{"Quants":{"cpu":"100m"}}}}`)
		if !ok {
			t.Fatal("decode")
		}
		return n
	}
	a, b, c, e := mk(), mk(), mk(), mk()
	c.Quants["cpu"] = fuzzQuantity{Format: "100m", value: 7, s: "100m!"}
	e.List[0].F64 = negZero()
	for _, n := range []*fuzzNode{a, b, c, e} {
		d.typed(reflect.ValueOf(n).Elem())
	}
	ptr := func(m map[fuzzName]fuzzQuantity) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }
	if ptr(a.Quants) != ptr(b.Quants) || ptr(a.Quants) != ptr(a.Children["c"].Quants) {
		t.Error("equal maps of structs not shared")
	}
	if ptr(c.Quants) == ptr(a.Quants) || c.Quants["cpu"].value != 7 {
		t.Error("maps differing in an unexported field shared")
	}
	if &e.List[0] == &a.List[0] || !bytes.Equal(mustJSON(t, e.List[0].F64), []byte("-0")) {
		t.Error("-0 shared with 0")
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

// TestDedupTypedSharedSlicesHaveNoSpareCapacity: an append to one
// object's shared slice never writes into another object's (appending to
// a cached object is a caller's bug, but it must stay that object's).
func TestDedupTypedSharedSlicesHaveNoSpareCapacity(t *testing.T) {
	d := newDeduper(DefaultDedupEntries)
	mk := func() *fuzzNode {
		n := &fuzzNode{Strs: make([]string, 3, 8), List: make([]fuzzLeaf, 1, 4)}
		copy(n.Strs, []string{"a", "b", "c"})
		n.List[0].S = "l"
		return n
	}
	a, b := mk(), mk()
	d.typed(reflect.ValueOf(a).Elem())
	d.typed(reflect.ValueOf(b).Elem())
	if &a.Strs[0] != &b.Strs[0] || &a.List[0] != &b.List[0] {
		t.Fatal("equal slices not shared")
	}
	x, y := append(a.Strs, "from-a"), append(b.Strs, "from-b")
	xl, yl := append(a.List, fuzzLeaf{S: "from-a"}), append(b.List, fuzzLeaf{S: "from-b"})
	if x[3] != "from-a" || y[3] != "from-b" || xl[1].S != "from-a" || yl[1].S != "from-b" {
		t.Fatalf("appends to two objects' shared slices met: %q %q %q %q", x[3], y[3], xl[1].S, yl[1].S)
	}
}

type nanKeyed struct {
	P *string
	M map[float64]*string
	I map[any]*string
}

// TestDedupTypedNaNKeys: a map whose key may be NaN keeps its entries
// (writing a shared value back under a NaN key would add an entry).
func TestDedupTypedNaNKeys(t *testing.T) {
	d := newDeduper(DefaultDedupEntries)
	s1, s2, s3 := "v", "v", "v"
	nan := math.NaN()
	o := &nanKeyed{P: &s1, M: map[float64]*string{nan: &s2}, I: map[any]*string{nan: &s3}}
	d.typed(reflect.ValueOf(o).Elem())
	if len(o.M) != 1 || len(o.I) != 1 {
		t.Fatalf("NaN-keyed maps grew: %d and %d entries", len(o.M), len(o.I))
	}
}

type dagNode struct {
	Name string
	L, R *dagNode
}

// TestDedupTypedSharedSubtreesBounded: an object whose pointers join
// again below (2^40 paths through 40 nodes, which only a program builds)
// is walked within a bounded budget, and unchanged.
func TestDedupTypedSharedSubtreesBounded(t *testing.T) {
	var n *dagNode
	for i := range 40 {
		n = &dagNode{Name: fmt.Sprint("n", i), L: n, R: n}
	}
	d := newDeduper(DefaultDedupEntries)
	d.typed(reflect.ValueOf(n).Elem())
	for i, m := 39, n; m != nil; i, m = i-1, m.L {
		if m.Name != fmt.Sprint("n", i) || m.L != m.R {
			t.Fatalf("node %d changed", i)
		}
	}
}

type capInner struct{ Args []string }

type capOuter struct {
	C   []capInner
	P   *capInner
	Raw []struct{ B []byte }
	M   map[string][]string
}

// TestDedupTypedNestedSlicesHaveNoSpareCapacity: a slice with spare
// capacity inside a struct, pointer, slice element or map value that is
// shared gives neither object room to append into the other's memory.
func TestDedupTypedNestedSlicesHaveNoSpareCapacity(t *testing.T) {
	d := newDeduper(DefaultDedupEntries)
	mk := func() *capOuter {
		args := func(s string) []string { a := make([]string, 1, 4); a[0] = s; return a }
		b := make([]byte, 3, 8)
		copy(b, "abc")
		return &capOuter{C: []capInner{{Args: args("x")}}, P: &capInner{Args: args("y")},
			Raw: []struct{ B []byte }{{B: b}}, M: map[string][]string{"k": args("z")}}
	}
	a, b := mk(), mk()
	d.typed(reflect.ValueOf(a).Elem())
	d.typed(reflect.ValueOf(b).Elem())
	if &a.C[0] != &b.C[0] || a.P != b.P || &a.Raw[0] != &b.Raw[0] || reflect.ValueOf(a.M).UnsafePointer() != reflect.ValueOf(b.M).UnsafePointer() {
		t.Fatal("equal parts not shared")
	}
	for name, s := range map[string][2][]string{"slice element": {a.C[0].Args, b.C[0].Args}, "pointer": {a.P.Args, b.P.Args}, "map value": {a.M["k"], b.M["k"]}} {
		x, y := append(s[0], "from-a"), append(s[1], "from-b")
		if x[1] != "from-a" || y[1] != "from-b" {
			t.Errorf("%s: appends to two objects' slices met: %q %q", name, x, y)
		}
	}
	x, y := append(a.Raw[0].B, 'A'), append(b.Raw[0].B, 'B')
	if x[3] != 'A' || y[3] != 'B' {
		t.Errorf("bytes: appends met: %q %q", x, y)
	}
}

type anyKeyed struct{ M map[any]int }

// TestDedupTypedNegativeZeroKeys: a map keyed by interfaces (or floats)
// is never replaced by another whose keys are == to its own: -0 stays -0.
func TestDedupTypedNegativeZeroKeys(t *testing.T) {
	d := newDeduper(DefaultDedupEntries)
	a := &anyKeyed{M: map[any]int{0.0: 1}}
	b := &anyKeyed{M: map[any]int{negZero(): 1}}
	d.typed(reflect.ValueOf(a).Elem())
	d.typed(reflect.ValueOf(b).Elem())
	for k := range b.M {
		if !math.Signbit(k.(float64)) {
			t.Fatal("the key -0 became 0")
		}
	}
}
