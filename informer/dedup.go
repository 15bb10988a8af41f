package informer

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/listwatch/listwatch/object"
)

// DefaultDedupEntries is the least bound on a deduper's tables; the bound
// is DedupEntriesPerObject times the objects stored when that is more.
// Past it the tables start afresh (see Options.DisableDedup).
const (
	DefaultDedupEntries   = 1 << 20
	DedupEntriesPerObject = 256
)

// deduper makes equal parts of the objects an informer stores share
// memory, without changing any value: the objects of a cluster repeat
// themselves (every replica of a ReplicaSet has the same labels,
// annotations, images, env and managedFields), and a decoder gives each
// its own copy.
//
//   - Strings (struct fields, slice elements, map values; for
//     Unstructured also map keys and json.Number) are replaced by an
//     equal string seen before; but not an object's own name, UID and
//     resourceVersion, which no other object repeats (see structPlan).
//   - Typed objects: bottom-up, every pointer, slice and map (exported
//     fields only) whose value equals one seen before, its own children
//     shared first and compared by identity, is replaced by that one: the
//     containers, env, probes, resources, tolerations, labels and
//     managedFields entries of a ReplicaSet's replicas become one copy; a
//     []byte (managedFields' fieldsV1) is compared by content.
//   - Unstructured: every map[string]any and []any subtree equal to one
//     seen before (after its children were shared) is replaced by it:
//     the managedFields and containers of replicas collapse into one
//     copy.
//
// The tables hold at most max(maxEntries, DedupEntriesPerObject ×
// objects()) strings and subtrees, then start afresh: objects already
// shared stay shared, and memory held only by the tables (strings of
// deleted objects, old resourceVersions) is released. The bound grows
// with the store because every object brings a few unique parts (name,
// UID, IPs) and the tables must hold those of every stored object to
// keep sharing the rest. Only the goroutine feeding the queue uses a
// deduper; mu makes it safe anyway.
type deduper struct {
	mu         sync.Mutex
	seed       maphash.Seed
	maxEntries int
	objects    func() int // how many objects are stored; nil: 0
	strs       map[string]string
	nodes      map[uint64]any // map[string]any, []any or []byte
	values     map[uint64]reflect.Value
	plans      map[reflect.Type][]fieldPlan // of struct types; never reset
}

func newDeduper(maxEntries int) *deduper {
	d := &deduper{seed: maphash.MakeSeed(), maxEntries: maxEntries, plans: map[reflect.Type][]fieldPlan{}}
	d.reset()
	return d
}

func (d *deduper) reset() {
	d.strs = map[string]string{}
	d.nodes = map[uint64]any{}
	d.values = map[uint64]reflect.Value{}
}

// strHash hashes a string d.str returned: equal strings it returns share
// their bytes, so their address stands for their content. (Strings the
// tables forgot hash apart from equal newer ones: they are then just
// not shared.)
func strHash(c string) uint64 {
	return mix(uint64(uintptr(unsafe.Pointer(unsafe.StringData(c))))*31 + uint64(len(c)) + 9)
}

// dedupObject shares obj's parts with the objects deduplicated before,
// never changing a value. A typed object is edited in place (its strings,
// string maps and byte slices replaced by equal ones); an Unstructured
// gets a new Object map and its old maps and slices are left untouched.
func dedupObject[T object.Object](d *deduper, obj T) T {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(d.strs) + len(d.nodes) + len(d.values); n > d.maxEntries {
		if d.objects == nil || n > DedupEntriesPerObject*d.objects() {
			d.reset()
		}
	}
	if u, ok := any(obj).(*object.Unstructured); ok {
		if u != nil && u.Object != nil {
			c, _ := d.value(u.Object)
			u.Object = c.(map[string]any)
		}
		return obj
	}
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		d.typed(v.Elem(), 0)
	}
	return obj
}

func (d *deduper) str(s string) string {
	if s == "" {
		return s
	}
	if c, ok := d.strs[s]; ok {
		return c
	}
	d.strs[s] = s
	return s
}

const (
	saltMap uint64 = 0x9e3779b97f4a7c15
	saltArr uint64 = 0xc2b2ae3d27d4eb4f
	saltNum uint64 = 0x165667b19e3779f9
)

func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

// value returns the shared equivalent of x (a decoded JSON value) and
// its hash.
func (d *deduper) value(x any) (any, uint64) {
	switch t := x.(type) {
	case string:
		c := d.str(t)
		return c, maphash.String(d.seed, c)
	case json.Number:
		c := d.str(string(t))
		return json.Number(c), maphash.String(d.seed, c) ^ saltNum
	case bool:
		if t {
			return t, 1
		}
		return t, 2
	case nil:
		return nil, 3
	case float64:
		return t, mix(uint64(int64(t)) + 4)
	case int64:
		return t, mix(uint64(t) + 5)
	case map[string]any:
		// t is never written: it may be the caller's (a fake's, say).
		kvs := make([]kv, 0, len(t))
		h := saltMap + uint64(len(t))
		for k, v := range t {
			cv, ch := d.value(v)
			kvs = append(kvs, kv{k, cv})
			h += mix(maphash.String(d.seed, k)*31 ^ ch)
		}
		if c, ok := d.nodes[h]; ok {
			if cm, ok := c.(map[string]any); ok && sameEntries(cm, kvs) {
				return cm, h
			}
		}
		n := make(map[string]any, len(kvs))
		for _, e := range kvs {
			n[d.str(e.k)] = e.v
		}
		if _, collided := d.nodes[h]; !collided {
			d.nodes[h] = n
		}
		return n, h
	case []any:
		n := make([]any, len(t))
		h := saltArr + uint64(len(t))
		for i, v := range t {
			cv, ch := d.value(v)
			n[i] = cv
			h = mix(h*31 + ch)
		}
		if len(t) == 0 {
			return n, h
		}
		if c, ok := d.nodes[h]; ok {
			if cs, ok := c.([]any); ok && len(cs) == len(n) && sameElems(cs, n) {
				return cs, h
			}
			return n, h
		}
		d.nodes[h] = n
		return n, h
	}
	return x, 0
}

// identical reports whether a and b are the same value, comparing maps
// and slices by identity (children are already shared, so equal
// subtrees are identical).
func identical(a, b any) bool {
	switch ta := a.(type) {
	case map[string]any:
		tb, ok := b.(map[string]any)
		return ok && reflect.ValueOf(ta).UnsafePointer() == reflect.ValueOf(tb).UnsafePointer()
	case []any:
		tb, ok := b.([]any)
		return ok && len(ta) == len(tb) && (len(ta) == 0 || &ta[0] == &tb[0])
	}
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	// Anything else a program (not a JSON decoder) put in an Unstructured,
	// such as a []string, is compared only when == cannot panic on it.
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() || !va.Comparable() || !vb.Comparable() {
		return false
	}
	return a == b
}

type kv struct {
	k string
	v any
}

func sameEntries(a map[string]any, b []kv) bool {
	if len(a) != len(b) {
		return false
	}
	for _, e := range b {
		va, ok := a[e.k]
		if !ok || !identical(va, e.v) {
			return false
		}
	}
	return true
}

func sameElems(a, b []any) bool {
	for i := range a {
		if !identical(a[i], b[i]) {
			return false
		}
	}
	return true
}

// typed shares the parts of a typed object (v, a struct) with equal
// parts seen before, bottom-up: strings by content; then every pointer,
// slice and map whose value is equal to one seen before (its own
// reference-typed children, shared first, compared by identity) is
// replaced by that one. Only exported fields are written; unexported
// ones (inside resource.Quantity or time.Time, say) are read to tell
// values apart, never changed. It returns v's hash.
func (d *deduper) typed(v reflect.Value, depth int) uint64 {
	if depth > maxDedupDepth {
		// A type that nests this deep (or a cycle of pointers): shared no
		// further, compared by identity.
		return d.shallowHash(v)
	}
	depth++
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if s != "" && v.CanSet() {
			c := d.str(s)
			if unsafe.StringData(c) != unsafe.StringData(s) {
				v.SetString(c)
			}
			return strHash(c)
		}
		return maphash.String(d.seed, s)
	case reflect.Struct:
		t := v.Type()
		plan, ok := d.plans[t]
		if !ok {
			plan = structPlan(t)
			d.plans[t] = plan
		}
		h := uint64(len(plan))
		settable := v.CanSet()
		for i, p := range plan {
			f := v.Field(i)
			var fh uint64
			if p == fieldWalk && settable {
				fh = d.typed(f, depth)
			} else {
				fh = d.shallowHash(f)
			}
			h = mix(h*31 + fh)
		}
		return h
	case reflect.Array:
		h := uint64(v.Len())
		for i := range v.Len() {
			h = mix(h*31 + d.typed(v.Index(i), depth))
		}
		return h
	case reflect.Pointer:
		if v.IsNil() {
			return 0x11
		}
		h := mix(d.typed(v.Elem(), depth) ^ 0x1234567)
		if v.CanSet() {
			d.share(v, h)
		}
		return d.shallowHash(v)
	case reflect.Slice:
		if v.IsNil() {
			return 0x12
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.CanSet() {
				if c := d.bytes(v.Bytes()); c != nil {
					v.SetBytes(c)
				}
			}
			return d.shallowHash(v)
		}
		h := saltArr + uint64(v.Len())
		for i := range v.Len() {
			h = mix(h*31 + d.typed(v.Index(i), depth))
		}
		if v.CanSet() {
			d.share(v, h)
		}
		return d.shallowHash(v)
	case reflect.Map:
		if v.IsNil() {
			return 0x13
		}
		h := saltMap + uint64(v.Len())
		if v.Type().ConvertibleTo(stringMapType) && v.Type().Key().Kind() == reflect.String && v.Type().Elem().Kind() == reflect.String {
			// Labels, annotations, selectors: no reflection per entry. The
			// conversion keeps the map (maps are references).
			m := v.Convert(stringMapType).Interface().(map[string]string)
			for k, s := range m {
				c := d.str(s)
				if unsafe.StringData(c) != unsafe.StringData(s) {
					m[k] = c
				}
				h += mix(maphash.String(d.seed, k)*31 ^ strHash(c))
			}
		} else {
			t := v.Type()
			key, val, orig := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem(), reflect.New(t.Elem()).Elem()
			for it := v.MapRange(); it.Next(); {
				key.SetIterKey(it)
				orig.SetIterValue(it)
				val.Set(orig)
				vh := d.typed(val, depth)
				if !shallowEqual(val, orig) {
					v.SetMapIndex(key, val)
				}
				h += mix(d.shallowHash(key)*31 ^ vh)
			}
		}
		if v.CanSet() {
			d.share(v, h)
		}
		return d.shallowHash(v)
	}
	return d.shallowHash(v)
}

var (
	stringMapType = reflect.TypeFor[map[string]string]()
)

// fieldPlan tells typed what to do with a struct field.
type fieldPlan uint8

const (
	// fieldWalk: walked (its strings and containers shared).
	fieldWalk fieldPlan = iota
	// fieldHash: only hashed. Unexported fields (never written), fields
	// holding nothing to share (numbers, bools, structs of them), and an
	// object's own name, UID and resourceVersion (fields Name, UID and
	// ResourceVersion of a struct that has all three and Namespace:
	// they are unique to the object, so remembering them costs table
	// space and saves nothing).
	fieldHash
)

// structPlan returns the plan of each field of the struct type t.
func structPlan(t reflect.Type) []fieldPlan {
	_, hasUID := t.FieldByName("UID")
	_, hasRV := t.FieldByName("ResourceVersion")
	_, hasNS := t.FieldByName("Namespace")
	objectMeta := hasUID && hasRV && hasNS
	p := make([]fieldPlan, t.NumField())
	for i := range p {
		f := t.Field(i)
		switch {
		case !f.IsExported() || !shareable(f.Type, 0):
			p[i] = fieldHash
		case objectMeta && f.Type.Kind() == reflect.String && (f.Name == "Name" || f.Name == "UID" || f.Name == "ResourceVersion"):
			p[i] = fieldHash
		}
	}
	return p
}

// shareable reports whether a value of type t may hold something typed
// shares: a string, pointer, slice, map or interface.
func shareable(t reflect.Type, depth int) bool {
	switch t.Kind() {
	case reflect.String, reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	case reflect.Array:
		return depth > maxDedupDepth || shareable(t.Elem(), depth+1)
	case reflect.Struct:
		if depth > maxDedupDepth {
			return true
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && shareable(f.Type, depth+1) {
				return true
			}
		}
	}
	return false
}

// maxDedupDepth bounds how deep typed descends: Kubernetes types nest
// far less; a type with a pointer cycle stops here.
const maxDedupDepth = 64

// share replaces v (a settable pointer, slice or map whose children are
// shared already) by an equal one seen before, or remembers it.
func (d *deduper) share(v reflect.Value, h uint64) {
	h = mix(h ^ uint64(uintptr(reflect.ValueOf(v.Type()).UnsafePointer())))
	if cv, ok := d.values[h]; ok {
		if cv.Type() == v.Type() && sameContent(cv, v) {
			v.Set(cv)
		}
		return
	}
	d.values[h] = v
}

// sameContent compares what two pointers, slices or maps of one type
// hold, one level deep (see shallowEqual).
func sameContent(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Pointer:
		return sameMemory(a.UnsafePointer(), b.UnsafePointer(), a.Type().Elem().Size()) || shallowEqual(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		if sameMemory(a.UnsafePointer(), b.UnsafePointer(), uintptr(a.Len())*a.Type().Elem().Size()) {
			return true
		}
		for i := range a.Len() {
			if !shallowEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for it := b.MapRange(); it.Next(); {
			av := a.MapIndex(it.Key())
			if !av.IsValid() || !shallowEqual(av, it.Value()) {
				return false
			}
		}
		return true
	}
	return false
}

// sameMemory reports whether the n bytes at a and at b are equal. Equal
// bytes are equal values (the same strings, pointers, slices, maps and
// interfaces, word for word), so this is a fast path of shallowEqual,
// which then decides what merely differs in bytes (the same text at two
// addresses, padding).
func sameMemory(a, b unsafe.Pointer, n uintptr) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || n == 0 {
		return false
	}
	return bytes.Equal(unsafe.Slice((*byte)(a), n), unsafe.Slice((*byte)(b), n))
}

// shallowHash hashes v without descending into pointers, slices or maps
// (their identity counts) and without writing anything.
func (d *deduper) shallowHash(v reflect.Value) uint64 {
	switch v.Kind() {
	case reflect.String:
		return maphash.String(d.seed, v.String())
	case reflect.Bool:
		if v.Bool() {
			return 1
		}
		return 2
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix(uint64(v.Int()) + 3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return mix(v.Uint() + 4)
	case reflect.Float32, reflect.Float64:
		return mix(math.Float64bits(v.Float()) + 5)
	case reflect.Struct:
		h := uint64(v.NumField())
		for i := range v.NumField() {
			h = mix(h*31 + d.shallowHash(v.Field(i)))
		}
		return h
	case reflect.Array:
		h := uint64(v.Len())
		for i := range v.Len() {
			h = mix(h*31 + d.shallowHash(v.Index(i)))
		}
		return h
	case reflect.Pointer, reflect.Map, reflect.UnsafePointer, reflect.Chan, reflect.Func:
		return mix(uint64(uintptr(v.UnsafePointer())) + 6)
	case reflect.Slice:
		return mix(uint64(uintptr(v.UnsafePointer()))*31 + uint64(v.Len()) + 7)
	}
	return 8 // interfaces and the rest: told apart by shallowEqual
}

// shallowEqual compares a and b (of one type) field by field, pointers,
// slices and maps by identity. Interfaces other than nil never compare
// equal, so nothing holding one is shared.
func shallowEqual(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Struct:
		for i := range a.NumField() {
			if !shallowEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !shallowEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Map:
		return a.UnsafePointer() == b.UnsafePointer()
	case reflect.Slice:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		if a.Len() != b.Len() {
			return false
		}
		if a.Len() == 0 {
			return true
		}
		return a.UnsafePointer() == b.UnsafePointer()
	case reflect.Interface:
		return a.IsNil() && b.IsNil()
	}
	return false
}

// bytes returns a slice equal to b seen before, or nil (then b is
// remembered).
func (d *deduper) bytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	h := maphash.Bytes(d.seed, b) ^ saltArr
	if c, ok := d.nodes[h]; ok {
		if cb, ok := c.([]byte); ok && bytes.Equal(cb, b) {
			return cb
		}
		return nil
	}
	d.nodes[h] = b
	return nil
}

// withDedup returns transform followed by d's sharing.
func withDedup[T object.Object](transform func(T) (T, error), d *deduper) func(T) (T, error) {
	return func(obj T) (T, error) {
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				return obj, err
			}
		}
		return dedupObject(d, obj), nil
	}
}
