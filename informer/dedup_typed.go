package informer

import (
	"bytes"
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"
)

// The sharing of typed objects walks them through a plan compiled once
// per Go type (a typeCode: field offsets, element sizes, what to walk),
// reading and writing memory at those offsets instead of going through
// reflect.Value for every field: a production-shaped pod has hundreds of
// fields, and reflection's per-field checks cost more than the sharing.
// Maps other than map[string]string still go through reflect, for their
// iteration.
//
// Writes are typed stores (of a string, an unsafe.Pointer or a slice
// header), so the garbage collector's write barriers see them.

// typeCode is the compiled plan of one Go type.
type typeCode struct {
	t    reflect.Type
	kind reflect.Kind
	size uintptr
	// id mixes the type into the hash of a shared value, so values of two
	// types with equal contents never meet in the table.
	id uint64
	// elem: of a pointer, slice, array or map; key: of a map.
	elem, key *typeCode
	// n is an array's length.
	n int
	// fields: of a struct, in order.
	fields []fieldCode
	// stringMap: a map whose type converts to map[string]string (labels,
	// annotations, selectors), walked without reflect.
	stringMap bool
	// keyUnstable: a map whose keys may not equal themselves (a float
	// NaN, in a float, complex or interface key) or equal other keys
	// (-0 and 0): its values are hashed but never written back, as
	// writing to a NaN key adds an entry instead of replacing one, and
	// the map itself is never shared.
	keyUnstable bool
	// bytes: a slice of a byte kind, shared by content.
	bytes bool
}

// fieldCode is a struct field: where it is, its type, and whether it is
// walked (its strings and containers shared) or only hashed: unexported
// fields (never written), fields holding nothing to share (numbers,
// bools, structs of them), and an object's own name, UID and
// resourceVersion (fields Name, UID and ResourceVersion of a struct that
// has all three and Namespace: they are unique to the object, so
// remembering them costs table space and saves nothing).
type fieldCode struct {
	off  uintptr
	code *typeCode
	walk bool
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// sharedValue is a pointer, slice or map remembered for sharing: the
// pointer word (of a slice, its data), with a slice's length.
type sharedValue struct {
	id  uint64 // its type's (typeCode.id)
	ptr unsafe.Pointer
	len int
}

var typeCodes sync.Map // reflect.Type → *typeCode; types never change

// codeOf returns the compiled plan of t.
func codeOf(t reflect.Type) *typeCode {
	if c, ok := typeCodes.Load(t); ok {
		return c.(*typeCode)
	}
	compiling := map[reflect.Type]*typeCode{}
	compileCode(t, compiling)
	for t, c := range compiling {
		typeCodes.LoadOrStore(t, c)
	}
	got, _ := typeCodes.Load(t)
	return got.(*typeCode)
}

// compileCode builds t's plan; compiling holds the plans of this call,
// so that a type that refers to itself refers to its own plan.
func compileCode(t reflect.Type, compiling map[reflect.Type]*typeCode) *typeCode {
	if c, ok := typeCodes.Load(t); ok {
		return c.(*typeCode)
	}
	if c, ok := compiling[t]; ok {
		return c
	}
	c := &typeCode{t: t, kind: t.Kind(), size: t.Size(), id: mix(uint64(uintptr(reflect.ValueOf(t).UnsafePointer())))}
	compiling[t] = c
	switch c.kind {
	case reflect.Pointer:
		c.elem = compileCode(t.Elem(), compiling)
	case reflect.Slice:
		c.elem = compileCode(t.Elem(), compiling)
		c.bytes = t.Elem().Kind() == reflect.Uint8
	case reflect.Array:
		c.elem = compileCode(t.Elem(), compiling)
		c.n = t.Len()
	case reflect.Map:
		c.key = compileCode(t.Key(), compiling)
		c.elem = compileCode(t.Elem(), compiling)
		c.stringMap = t.ConvertibleTo(stringMapType) && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
		c.keyUnstable = mayHoldNaN(t.Key(), 0)
	case reflect.Struct:
		_, hasUID := t.FieldByName("UID")
		_, hasRV := t.FieldByName("ResourceVersion")
		_, hasNS := t.FieldByName("Namespace")
		objectMeta := hasUID && hasRV && hasNS
		c.fields = make([]fieldCode, t.NumField())
		for i := range c.fields {
			f := t.Field(i)
			walk := f.IsExported() && shareable(f.Type, 0)
			if objectMeta && f.Type.Kind() == reflect.String && (f.Name == "Name" || f.Name == "UID" || f.Name == "ResourceVersion") {
				walk = false
			}
			c.fields[i] = fieldCode{off: f.Offset, code: compileCode(f.Type, compiling), walk: walk}
		}
	}
	return c
}

var stringMapType = reflect.TypeFor[map[string]string]()

// mayHoldNaN reports whether a value of type t may hold a float NaN,
// which is not equal to itself: a float, complex or interface, or an
// array or struct of one.
func mayHoldNaN(t reflect.Type, depth int) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.Interface:
		return true
	case reflect.Array:
		return depth > maxDedupDepth || mayHoldNaN(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if depth > maxDedupDepth || mayHoldNaN(t.Field(i).Type, depth+1) {
				return true
			}
		}
	}
	return false
}

// shareable reports whether a value of type t may hold something walk
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

// memoDepth is walk's depth argument at the fields of an object's
// metadata, spec and status, where a protomemo.Memo hands out the parts
// it decodes once: the object's struct is walked at depth 0, its fields
// at 1, theirs at 2.
const memoDepth = 2

// maxDedupDepth bounds how deep walk descends: Kubernetes types nest far
// less; a type with a pointer cycle stops here.
const maxDedupDepth = 64

// dedupBudget bounds the values walk visits in one object: a
// production-shaped pod has a few thousand.
const dedupBudget = 1 << 20

// typed shares the parts of v, an addressable value (an object), as walk
// does, with a fresh budget.
func (d *deduper) typed(v reflect.Value) uint64 {
	d.budget = dedupBudget
	return d.walk(codeOf(v.Type()), v.Addr().UnsafePointer(), 0)
}

// walk shares the parts of the value of type c at p with equal parts
// seen before, bottom-up: strings by content; then every pointer, slice
// and map whose value is equal to one seen before (its own
// reference-typed children, shared first, compared by identity) is
// replaced by that one. Only exported fields are written; unexported
// ones (inside resource.Quantity or time.Time, say) are read to tell
// values apart, never changed. It returns the value's hash.
func (d *deduper) walk(c *typeCode, p unsafe.Pointer, depth int) uint64 {
	if depth == memoDepth && d.memo != nil {
		return d.walkMemo(c, p, depth)
	}
	return d.walkValue(c, p, depth)
}

// walkMemo walks the value at p, at memoDepth: a pointer, slice or map
// the memo handed out is walked the first time only (no object holding
// it has been stored yet: each is walked before it is queued), and
// after that replaced by what that walk made of it, without walking it
// again, so that it is never written once other objects hold it.
func (d *deduper) walkMemo(c *typeCode, p unsafe.Pointer, depth int) uint64 {
	word, n := memoWord(c, p)
	o := d.memo.Owner(word)
	if o == nil || o.Len != n {
		return d.walkValue(c, p, depth)
	}
	if canon, ok := o.Walked(); ok {
		if c.kind == reflect.Slice {
			*(*sliceHeader)(p) = sliceHeader{data: canon, len: n, cap: n}
		} else {
			*(*unsafe.Pointer)(p) = canon
		}
		return d.shallowHash(c, p)
	}
	h := d.walkValue(c, p, depth)
	word, _ = memoWord(c, p) // the walk may have shared it
	o.MarkWalked(word)
	return h
}

// memoWord returns the pointer word of the pointer, map or slice of type
// c at p (a slice's data, with its length), as a memo knows its parts;
// nil for other kinds.
func memoWord(c *typeCode, p unsafe.Pointer) (unsafe.Pointer, int) {
	switch c.kind {
	case reflect.Pointer, reflect.Map:
		return *(*unsafe.Pointer)(p), 0
	case reflect.Slice:
		sh := (*sliceHeader)(p)
		return sh.data, sh.len
	}
	return nil, 0
}

// walkValue is walk without the memo's parts.
func (d *deduper) walkValue(c *typeCode, p unsafe.Pointer, depth int) uint64 {
	// Out of budget, the object's own struct and its metadata, spec and
	// status (bounded by their types) are still walked down to the
	// memo's parts, so that walkMemo marks each (walked, as it is)
	// before the object is stored: a part left unmarked would be walked,
	// and written, with the next object that has it.
	if depth > maxDedupDepth || d.budget <= 0 && (depth >= memoDepth || d.memo == nil || c.kind != reflect.Struct) {
		// A type that nests this deep (or a cycle of pointers), or an
		// object of more parts than the budget (pointers that join again
		// below, which a program, not a decoder, may build, would be
		// walked once per path): shared no further, compared by identity.
		return d.shallowHash(c, p)
	}
	d.budget--
	depth++
	switch c.kind {
	case reflect.String:
		s := *(*string)(p)
		if s == "" {
			return 0x14
		}
		cs := d.str(s)
		if unsafe.StringData(cs) != unsafe.StringData(s) {
			*(*string)(p) = cs
		}
		return strHash(cs)
	case reflect.Struct:
		h := uint64(len(c.fields))
		for i := range c.fields {
			f := &c.fields[i]
			fp := unsafe.Add(p, f.off)
			var fh uint64
			if f.walk {
				fh = d.walk(f.code, fp, depth)
			} else {
				fh = d.shallowHash(f.code, fp)
			}
			h = mix(h*31 + fh)
		}
		return h
	case reflect.Array:
		h := uint64(c.n)
		for i := range c.n {
			h = mix(h*31 + d.walk(c.elem, unsafe.Add(p, uintptr(i)*c.elem.size), depth))
		}
		return h
	case reflect.Pointer:
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return 0x11
		}
		d.share(c, p, mix(d.walk(c.elem, q, depth)^0x1234567))
		return d.shallowHash(c, p)
	case reflect.Slice:
		sh := (*sliceHeader)(p)
		if sh.data == nil {
			return 0x12
		}
		// Without its spare capacity, whether or not it is shared: a
		// struct, pointer or slice holding it may be shared (they compare
		// it by its array and length), and an append to one object's
		// slice must not write into another's (appending to a cached
		// object is a bug, but it must not corrupt other objects).
		sh.cap = sh.len
		if c.bytes {
			if cb := d.bytes(unsafe.Slice((*byte)(sh.data), sh.len)); cb != nil {
				*sh = sliceHeader{data: unsafe.Pointer(unsafe.SliceData(cb)), len: len(cb), cap: cap(cb)}
			}
			return d.shallowHash(c, p)
		}
		h := saltArr + uint64(sh.len)
		for i := range sh.len {
			h = mix(h*31 + d.walk(c.elem, unsafe.Add(sh.data, uintptr(i)*c.elem.size), depth))
		}
		d.share(c, p, h)
		return d.shallowHash(c, p)
	case reflect.Map:
		if *(*unsafe.Pointer)(p) == nil {
			return 0x13
		}
		var h uint64
		if c.stringMap {
			// The map's type has map[string]string's underlying type, so
			// it is one.
			m := *(*map[string]string)(p)
			h = saltMap + uint64(len(m))
			for k, s := range m {
				cs := d.str(s)
				if unsafe.StringData(cs) != unsafe.StringData(s) {
					m[k] = cs
				}
				h += mix(maphash.String(d.seed, k)*31 ^ strHash(cs))
			}
		} else {
			v := reflect.NewAt(c.t, p).Elem()
			h = saltMap + uint64(v.Len())
			x := d.takeScratch(c)
			for it := v.MapRange(); it.Next(); {
				x.key.SetIterKey(it)
				x.orig.SetIterValue(it)
				x.val.Set(x.orig)
				var vh uint64
				if c.keyUnstable {
					vh = d.shallowHash(c.elem, x.op)
				} else if vh = d.walk(c.elem, x.vp, depth); !sameMemory(x.vp, x.op, c.elem.size) {
					// walk changed the copy (shared a part, interned a
					// string, trimmed a slice's capacity): the copy is a
					// byte-for-byte copy until then, so any change shows.
					v.SetMapIndex(x.key, x.val)
				}
				h += mix(d.shallowHash(c.key, x.kp)*31 ^ vh)
			}
			d.putScratch(c, x)
		}
		if !c.keyUnstable {
			// A map whose keys may be NaN or -0 is never shared: looking
			// its keys up in another map (with ==) would take -0 for 0.
			d.share(c, p, h)
		}
		return d.shallowHash(c, p)
	}
	return d.shallowHash(c, p)
}

// share replaces the pointer, slice or map at p (of type c, its children
// shared already) by an equal one seen before, or remembers it.
func (d *deduper) share(c *typeCode, p unsafe.Pointer, h uint64) {
	h = mix(h ^ c.id)
	if cv, ok := d.values[h]; ok {
		if cv.id == c.id && d.sameContent(c, cv, p) {
			if c.kind == reflect.Slice {
				*(*sliceHeader)(p) = sliceHeader{data: cv.ptr, len: cv.len, cap: cv.len}
			} else {
				*(*unsafe.Pointer)(p) = cv.ptr
			}
		}
		return
	}
	sv := sharedValue{id: c.id}
	if c.kind == reflect.Slice {
		sh := (*sliceHeader)(p)
		// Shared without its spare capacity: an append to one object's
		// slice must not write into another's (appending to a cached
		// object is a bug, but it must not corrupt other objects).
		sv.ptr, sv.len = sh.data, sh.len
	} else {
		sv.ptr = *(*unsafe.Pointer)(p)
	}
	d.values[h] = sv
}

// sameContent compares what a remembered pointer, slice or map and the
// one at p (both of type c) hold, one level deep (see shallowEqual).
func (d *deduper) sameContent(c *typeCode, a sharedValue, p unsafe.Pointer) bool {
	switch c.kind {
	case reflect.Pointer:
		b := *(*unsafe.Pointer)(p)
		return sameMemory(a.ptr, b, c.elem.size) || shallowEqual(c.elem, a.ptr, b)
	case reflect.Slice:
		b := (*sliceHeader)(p)
		if a.len != b.len {
			return false
		}
		if sameMemory(a.ptr, b.data, uintptr(a.len)*c.elem.size) {
			return true
		}
		for i := range a.len {
			off := uintptr(i) * c.elem.size
			if !shallowEqual(c.elem, unsafe.Add(a.ptr, off), unsafe.Add(b.data, off)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if c.stringMap {
			am := *(*map[string]string)(unsafe.Pointer(&a.ptr))
			bm := *(*map[string]string)(p)
			if len(am) != len(bm) {
				return false
			}
			for k, bv := range bm {
				if av, ok := am[k]; !ok || av != bv {
					return false
				}
			}
			return true
		}
		av, bv := reflect.NewAt(c.t, unsafe.Pointer(&a.ptr)).Elem(), reflect.NewAt(c.t, p).Elem()
		if av.Len() != bv.Len() {
			return false
		}
		// Map values are not addressable: compare copies.
		x := d.takeScratch(c)
		defer d.putScratch(c, x)
		for it := bv.MapRange(); it.Next(); {
			x.key.SetIterKey(it)
			y := av.MapIndex(x.key)
			if !y.IsValid() {
				return false
			}
			x.val.Set(y)
			x.orig.SetIterValue(it)
			if !shallowEqual(c.elem, x.vp, x.op) {
				return false
			}
		}
		return true
	}
	return false
}

// mapScratch is a key and two values of a map type, addressable, to
// walk and compare its entries without allocating per entry.
type mapScratch struct {
	key, val, orig reflect.Value
	kp, vp, op     unsafe.Pointer
}

// takeScratch returns a scratch of the map type c, which putScratch
// gives back (a map's values may hold maps of the same type, so each
// walk takes its own).
func (d *deduper) takeScratch(c *typeCode) *mapScratch {
	if s := d.scratch[c]; len(s) > 0 {
		x := s[len(s)-1]
		d.scratch[c] = s[:len(s)-1]
		return x
	}
	x := &mapScratch{key: reflect.New(c.key.t).Elem(), val: reflect.New(c.elem.t).Elem(), orig: reflect.New(c.elem.t).Elem()}
	x.kp, x.vp, x.op = x.key.Addr().UnsafePointer(), x.val.Addr().UnsafePointer(), x.orig.Addr().UnsafePointer()
	return x
}

// putScratch gives x back, cleared so that it keeps nothing alive.
func (d *deduper) putScratch(c *typeCode, x *mapScratch) {
	x.key.SetZero()
	x.val.SetZero()
	x.orig.SetZero()
	if d.scratch == nil {
		d.scratch = map[*typeCode][]*mapScratch{}
	}
	d.scratch[c] = append(d.scratch[c], x)
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

// shallowHash hashes the value of type c at p without descending into
// pointers, slices or maps (their identity counts) and without writing
// anything.
func (d *deduper) shallowHash(c *typeCode, p unsafe.Pointer) uint64 {
	switch c.kind {
	case reflect.String:
		s := *(*string)(p)
		if s == "" {
			return 0x14
		}
		return maphash.String(d.seed, s)
	case reflect.Bool:
		if *(*bool)(p) {
			return 1
		}
		return 2
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return mix(loadBits(c, p) + 3)
	case reflect.Struct:
		h := uint64(len(c.fields))
		for i := range c.fields {
			h = mix(h*31 + d.shallowHash(c.fields[i].code, unsafe.Add(p, c.fields[i].off)))
		}
		return h
	case reflect.Array:
		h := uint64(c.n)
		for i := range c.n {
			h = mix(h*31 + d.shallowHash(c.elem, unsafe.Add(p, uintptr(i)*c.elem.size)))
		}
		return h
	case reflect.Pointer, reflect.Map, reflect.UnsafePointer, reflect.Chan, reflect.Func:
		return mix(uint64(uintptr(*(*unsafe.Pointer)(p))) + 6)
	case reflect.Slice:
		sh := (*sliceHeader)(p)
		return mix(uint64(uintptr(sh.data))*31 + uint64(sh.len) + 7)
	}
	return 8 // interfaces and the rest: told apart by shallowEqual
}

// loadBits returns the bits of the number of type c at p, widened.
func loadBits(c *typeCode, p unsafe.Pointer) uint64 {
	switch c.size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// shallowEqual compares the values of type c at a and b field by field,
// pointers, slices and maps by identity. Floats are equal when their
// bits are. Interfaces other than nil, complex numbers, channels and
// functions never compare equal, so nothing holding one is shared.
func shallowEqual(c *typeCode, a, b unsafe.Pointer) bool {
	switch c.kind {
	case reflect.String:
		return *(*string)(a) == *(*string)(b)
	case reflect.Bool:
		return *(*bool)(a) == *(*bool)(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return loadBits(c, a) == loadBits(c, b)
	case reflect.Struct:
		for i := range c.fields {
			f := &c.fields[i]
			if !shallowEqual(f.code, unsafe.Add(a, f.off), unsafe.Add(b, f.off)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range c.n {
			off := uintptr(i) * c.elem.size
			if !shallowEqual(c.elem, unsafe.Add(a, off), unsafe.Add(b, off)) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Map:
		return *(*unsafe.Pointer)(a) == *(*unsafe.Pointer)(b)
	case reflect.Slice:
		sa, sb := (*sliceHeader)(a), (*sliceHeader)(b)
		if sa.data == nil || sb.data == nil {
			return (sa.data == nil) == (sb.data == nil)
		}
		return sa.len == sb.len && (sa.len == 0 || sa.data == sb.data)
	case reflect.Interface:
		return *(*[2]unsafe.Pointer)(a) == [2]unsafe.Pointer{} && *(*[2]unsafe.Pointer)(b) == [2]unsafe.Pointer{}
	}
	return false
}
