package informer

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/listwatch/listwatch/internal/protomemo"
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
//     resourceVersion, which no other object repeats (see fieldCode).
//   - Typed objects: bottom-up, every pointer, slice and map (exported
//     fields only) whose value equals one seen before, its own children
//     shared first and compared by identity, is replaced by that one: the
//     containers, env, probes, resources, tolerations, labels and
//     managedFields entries of a ReplicaSet's replicas become one copy; a
//     []byte (managedFields' fieldsV1) is compared by content. Maps keyed
//     by floats or interfaces are never replaced (== takes -0 for 0).
//     Every slice walked loses its spare capacity, so that no two
//     objects can append into one array.
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
	values     map[uint64]sharedValue
	scratch    map[*typeCode][]*mapScratch // see takeScratch; never reset
	budget     int                         // values walk may still visit in this object
	// memo decoded the parts of the objects' metadata, spec and status
	// that repeat once each (nil: the informer has a Transform, lists
	// through a ListerWatcher of its own, or dedup is off): walk goes
	// through each such part once, the first time an object brings it,
	// and shares it as it is after that (see walkMemo).
	memo *protomemo.Memo
}

func newDeduper(maxEntries int) *deduper {
	d := &deduper{seed: maphash.MakeSeed(), maxEntries: maxEntries}
	d.reset()
	return d
}

func (d *deduper) reset() {
	d.strs = map[string]string{}
	d.nodes = map[uint64]any{}
	d.values = map[uint64]sharedValue{}
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
			d.budget = dedupBudget
			c, _ := d.value(u.Object, 0)
			u.Object = c.(map[string]any)
		}
		return obj
	}
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		d.typed(v.Elem())
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
func (d *deduper) value(x any, depth int) (any, uint64) {
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
		if depth > maxDedupDepth || d.budget <= 0 {
			// Nested this deep (or a cycle, which a program may build),
			// or past the budget (subtrees a program joined again):
			// kept as it is, told apart by its identity.
			return t, mix(uint64(uintptr(reflect.ValueOf(t).UnsafePointer())) + 10)
		}
		d.budget--
		// t is never written: it may be the caller's (a fake's, say).
		kvs := make([]kv, 0, len(t))
		h := saltMap + uint64(len(t))
		for k, v := range t {
			cv, ch := d.value(v, depth+1)
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
		if depth > maxDedupDepth || d.budget <= 0 {
			return t, mix(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(t))))*31 + uint64(len(t)) + 11)
		}
		d.budget--
		n := make([]any, len(t))
		h := saltArr + uint64(len(t))
		for i, v := range t {
			cv, ch := d.value(v, depth+1)
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
	switch va.Kind() {
	case reflect.Float32, reflect.Float64:
		// By their bits: == takes -0 for 0.
		return math.Float64bits(va.Float()) == math.Float64bits(vb.Float())
	}
	if mayHoldNaN(va.Type(), 0) {
		// A value holding a float (a complex, a struct of one) is -0
		// and 0 alike to ==: never shared.
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
