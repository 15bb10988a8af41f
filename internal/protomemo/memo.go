// Package protomemo decodes protobuf objects of generated Go types (those
// of k8s.io/api: a gogo-generated Unmarshal method and `protobuf:"…"`
// struct tags) so that a part of an object whose bytes equal those of a
// part decoded before is not decoded again: the object gets the value
// decoded then, shared.
//
// The objects of a cluster repeat themselves: the replicas of a
// ReplicaSet have byte-identical containers, volumes, tolerations,
// affinity, owner references, labels and annotations, about half of a
// production pod's bytes and of its decoding time. An informer shares
// those parts anyway once decoded (package informer's sharing); a Memo
// lets it skip decoding them, and skip walking them to share them.
//
// # What is memoized
//
// An object's fields that are messages held by value (a k8s.io/api
// object's metadata, spec and status) are split into their fields; each
// of those that is a pointer to a message, a slice of messages or a map
// (containers, affinity, labels, …) is looked up by its bytes (all of its
// records, which must be consecutive) and the type and field it belongs
// to. A hit copies the remembered pointer, slice header or map into the
// object; a miss decodes the field alone, with its parent's generated
// Unmarshal given only the field's records, and remembers what it got.
// Everything else is decoded by the parent's Unmarshal on the remaining
// records. Decoding one field's records apart from the others gives what
// decoding them together gives: each field of a generated message is set
// from its own records only. And read from them only, when they are well
// formed: generated code reads a map entry's key and value, and a
// repeated scalar's packed values, up to the end of the message, not of
// their record, so a malformed one reads on into the records after it. A
// message with such a record (at the object's level or the level split)
// is decoded whole.
//
// A field whose lookups seldom hit (status conditions, managedFields
// entries, which hold per-object times) is looked up only now and then,
// so that it costs next to nothing.
//
// # Sharing
//
// Values a Memo hands out are shared by every object decoded with the
// same bytes, so the objects must be treated as immutable, as an
// informer's are. Owner tells the sharing walk which values came from the
// memo, so that it walks each of them once (the first object holding it
// is walked before any is stored) and never writes into one again.
//
// A Memo is safe for concurrent use. It remembers at most MaxKeyBytes of
// parts, then decodes on without remembering more, until Reset (an
// informer resets its memo at the end of each list).
package protomemo

import (
	"bytes"
	"context"
	"hash/maphash"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// MaxKeyBytes bounds the bytes of the parts a Memo remembers.
const MaxKeyBytes = 16 << 20

// Unmarshaler is the method of a generated protobuf message type.
type Unmarshaler interface{ Unmarshal([]byte) error }

// Memo remembers decoded parts by their bytes.
type Memo struct {
	seed     maphash.Seed
	entries  sync.Map // uint64 (hash of field and bytes) → *entry
	owned    sync.Map // unsafe.Pointer (pointer, map or slice data) → *Owned
	keyBytes atomic.Int64
	maxBytes int64
	// nOwned counts the values ever owned since Reset, raised before
	// each is: Owner skips the lookup while it is 0 (between lists).
	nOwned atomic.Int64
	hits   atomic.Int64
	misses atomic.Int64
	pool   sync.Pool // *scratch
}

// New returns an empty Memo.
func New() *Memo {
	return &Memo{seed: maphash.MakeSeed(), maxBytes: MaxKeyBytes}
}

type memoKey struct{}

// NewContext returns ctx carrying m, for a list's decoder (package
// client) to find.
func NewContext(ctx context.Context, m *Memo) context.Context {
	return context.WithValue(ctx, memoKey{}, m)
}

// FromContext returns the Memo ctx carries, or nil.
func FromContext(ctx context.Context) *Memo {
	m, _ := ctx.Value(memoKey{}).(*Memo)
	return m
}

// Owned is what a Memo tells of a value it handed out: its length (of a
// slice; 0 otherwise) and what the sharing walk made of it.
type Owned struct {
	Len    int
	walked atomic.Bool
	canon  atomic.Pointer[byte]
}

// Walked reports whether MarkWalked was called, and returns the pointer
// word it was given.
func (o *Owned) Walked() (canon unsafe.Pointer, ok bool) {
	if !o.walked.Load() {
		return nil, false
	}
	return unsafe.Pointer(o.canon.Load()), true
}

// MarkWalked records that the sharing walk has been through the value
// and replaced it by the value whose pointer word is canon (the value
// itself, or an equal one seen before): from then on the value is
// replaced by that one without a walk, and never written.
func (o *Owned) MarkWalked(canon unsafe.Pointer) {
	o.canon.Store((*byte)(canon))
	o.walked.Store(true)
}

// Owner returns what m knows of the value whose pointer word (a
// pointer's, a map's, or a slice's data) is p, or nil when m never
// handed it out.
func (m *Memo) Owner(p unsafe.Pointer) *Owned {
	if m == nil || p == nil || m.nOwned.Load() == 0 {
		return nil
	}
	if v, ok := m.owned.Load(p); ok {
		return v.(*Owned)
	}
	return nil
}

// Reset forgets every part. The caller makes sure that no object
// decoded before is still to be walked (an informer resets its memo
// once a list's objects are all in its queue, or dropped), since
// Owner no longer knows their parts.
func (m *Memo) Reset() {
	m.entries.Clear()
	m.owned.Clear()
	m.keyBytes.Store(0)
	m.nOwned.Store(0)
}

// Stats returns how many lookups hit and missed.
func (m *Memo) Stats() (hits, misses int64) {
	if m == nil {
		return 0, 0
	}
	return m.hits.Load(), m.misses.Load()
}

// Supports reports whether Decode can memoize parts of a *T, with T the
// pointed-to type of obj: a struct with protobuf-tagged fields that
// Decode splits. Decode works on any Unmarshaler.
func Supports(t reflect.Type) bool {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || !t.Implements(unmarshalerType) {
		return false
	}
	pl := planOf(t.Elem())
	if pl.whole {
		return false
	}
	for _, f := range pl.fields {
		if f != nil && f.kind == kindValue {
			return true
		}
	}
	return false
}

// Decode decodes b into obj, which must be a non-nil pointer to a zero
// struct value of a generated type, as obj.Unmarshal(b) would.
func (m *Memo) Decode(obj Unmarshaler, b []byte) error {
	v := reflect.ValueOf(obj)
	if m == nil || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj.Unmarshal(b)
	}
	s, _ := m.pool.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	err := m.decode(planOf(v.Type().Elem()), v.UnsafePointer(), obj, b, 0, s)
	m.pool.Put(s)
	return err
}

var unmarshalerType = reflect.TypeFor[Unmarshaler]()

// scratch is one decode's reusable buffers, per level of message.
type scratch struct {
	recs [2][]record
	rest [2][]byte
}

// record is one field record of a message: its number and wire type,
// where it starts (its tag), where its value starts (a length, for bytes)
// and its end.
type record struct {
	num             protowire.Number
	typ             protowire.Type
	start, val, end int
}

// maxNum bounds the field numbers Decode splits out; generated
// Kubernetes messages number their fields far lower.
const maxNum = 64

func (m *Memo) decode(pl *msgPlan, p unsafe.Pointer, u Unmarshaler, b []byte, depth int, s *scratch) error {
	if pl.whole {
		return u.Unmarshal(b)
	}
	recs := s.recs[depth][:0]
	// count: records of each field, exactly (one that stopped at 255
	// would take 255 consecutive records of a field for all of them).
	var count [maxNum]int
	var notBytes uint64
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return u.Unmarshal(b) // its own error
		}
		l := protowire.ConsumeFieldValue(num, typ, b[off+n:])
		if l < 0 {
			return u.Unmarshal(b)
		}
		recs = append(recs, record{num: num, typ: typ, start: off, val: off + n, end: off + n + l})
		if num < maxNum {
			count[num]++
			if typ != protowire.BytesType {
				notBytes |= 1 << num
			} else if f := pl.fields[num]; f != nil && f.check != nil {
				if v, _ := protowire.ConsumeBytes(b[off+n:]); !f.check(v) {
					return u.Unmarshal(b) // read with what follows it
				}
			}
		}
		off += n + l
	}
	s.recs[depth] = recs
	rest := s.rest[depth][:0]
	split := false
	for i := 0; i < len(recs); {
		num := recs[i].num
		j := i + 1
		for j < len(recs) && recs[j].num == num {
			j++
		}
		f := pl.field(num)
		handled := false
		if f != nil && notBytes&(1<<num) == 0 && count[num] == j-i {
			switch {
			case depth == 0 && f.kind == kindValue && j == i+1:
				fp := unsafe.Add(p, f.off)
				fu := reflect.NewAt(f.typ, fp).Interface().(Unmarshaler)
				payload, _ := protowire.ConsumeBytes(b[recs[i].val:recs[i].end])
				if err := m.decode(f.sub, fp, fu, payload, 1, s); err != nil {
					return err
				}
				handled = true
			case depth == 1 && f.kind >= kindPointer && f.worthTrying():
				if err := m.field(f, p, u, b[recs[i].start:recs[j-1].end]); err != nil {
					return err
				}
				handled = true
			}
		}
		if handled {
			split = true
		} else {
			rest = append(rest, b[recs[i].start:recs[j-1].end]...)
		}
		i = j
	}
	s.rest[depth] = rest
	if !split {
		return u.Unmarshal(b)
	}
	if len(rest) == 0 {
		return nil
	}
	return u.Unmarshal(rest)
}

// field decodes the records group of field f into the message at p (u
// is the same), from the memo when it has them.
func (m *Memo) field(f *fieldPlan, p unsafe.Pointer, u Unmarshaler, group []byte) error {
	h := maphash.Bytes(m.seed, group) ^ f.id
	fp := unsafe.Add(p, f.off)
	if v, ok := m.entries.Load(h); ok {
		e := v.(*entry)
		if e.field == f && bytes.Equal(e.key, group) {
			e.assign(fp)
			f.tried(true)
			m.hits.Add(1)
			return nil
		}
		return u.Unmarshal(group) // another part with the same hash
	}
	f.tried(false)
	m.misses.Add(1)
	if err := u.Unmarshal(group); err != nil {
		return err
	}
	if m.keyBytes.Load()+int64(len(group)) > m.maxBytes {
		return nil
	}
	e := &entry{field: f, key: bytes.Clone(group)}
	if f.kind == kindSlice {
		sh := (*sliceHeader)(fp)
		// Without spare capacity: an append to one object's slice must
		// not write into the others'.
		sh.cap = sh.len
		e.word, e.len = sh.data, sh.len
	} else {
		e.word = *(*unsafe.Pointer)(fp)
	}
	if e.word == nil {
		return nil
	}
	// Owned before it is published: whoever gets the value from the
	// memo finds it owned.
	m.nOwned.Add(1)
	m.owned.Store(e.word, &Owned{Len: e.len})
	if _, lost := m.entries.LoadOrStore(h, e); lost {
		m.owned.Delete(e.word)
		return nil
	}
	m.keyBytes.Add(int64(len(group)))
	return nil
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// entry is a remembered part: the field it is of, its bytes, and its
// decoded value's pointer word (and length, of a slice).
type entry struct {
	field *fieldPlan
	key   []byte
	word  unsafe.Pointer
	len   int
}

// assign stores e's value in the field at fp (typed stores, which the
// garbage collector's write barriers see).
func (e *entry) assign(fp unsafe.Pointer) {
	if e.field.kind == kindSlice {
		*(*sliceHeader)(fp) = sliceHeader{data: e.word, len: e.len, cap: e.len}
		return
	}
	*(*unsafe.Pointer)(fp) = e.word
}

// fieldKind is what Decode does with a field.
type fieldKind uint8

const (
	kindNone    fieldKind = iota
	kindValue             // a message by value: split, at the object's level
	kindPointer           // a pointer to a message: memoized
	kindSlice             // a slice of messages or of pointers to them: memoized
	kindMap               // a map: memoized
)

// msgPlan is what Decode knows of a message type: its fields by number,
// and whether it is decoded whole (it has a field numbered maxNum or more
// whose records need a check).
type msgPlan struct {
	fields [maxNum]*fieldPlan
	whole  bool
}

func (pl *msgPlan) field(n protowire.Number) *fieldPlan {
	if n <= 0 || n >= maxNum {
		return nil
	}
	return pl.fields[n]
}

// fieldPlan is one protobuf-tagged field of a struct, and how often its
// lookups hit, for all Memos (a type's fields repeat alike everywhere).
type fieldPlan struct {
	kind fieldKind
	off  uintptr
	typ  reflect.Type
	sub  *msgPlan // kindValue
	id   uint64   // mixed into the hash of its records
	// check tells whether a value of the field (a length-delimited
	// record's) is read within its record; nil when any is (recordCheck).
	check func([]byte) bool
	// tries and hits count lookups; skips, lookups left out.
	tries, hits, skips atomic.Int64
}

// worthTrying says whether to look the field up: always while its
// lookups hit a quarter of the time or more, else once in 32.
func (f *fieldPlan) worthTrying() bool {
	t, h := f.tries.Load(), f.hits.Load()
	if t < 32 || 4*h >= t {
		return true
	}
	return f.skips.Add(1)%32 == 0
}

// tried counts a lookup, forgetting old ones by halves so that the rate
// follows what objects come now.
func (f *fieldPlan) tried(hit bool) {
	if hit {
		f.hits.Add(1)
	}
	if t := f.tries.Add(1); t >= 1<<12 {
		f.tries.Store(t / 2)
		f.hits.Store(f.hits.Load() / 2)
	}
}

var (
	plans  sync.Map // reflect.Type → *msgPlan
	nextID atomic.Uint64
)

// planOf returns the plan of struct type t, built once.
func planOf(t reflect.Type) *msgPlan {
	if pl, ok := plans.Load(t); ok {
		return pl.(*msgPlan)
	}
	pl := buildPlan(t, 0)
	got, _ := plans.LoadOrStore(t, pl)
	return got.(*msgPlan)
}

// buildPlan reads t's protobuf tags; level 0 is the object, whose
// by-value message fields get plans of their own (level 1).
func buildPlan(t reflect.Type, level int) *msgPlan {
	pl := &msgPlan{}
	for i := range t.NumField() {
		sf := t.Field(i)
		num := tagNumber(sf.Tag.Get("protobuf"))
		if num <= 0 || !sf.IsExported() {
			continue
		}
		check := recordCheck(sf)
		if num >= maxNum {
			pl.whole = pl.whole || check != nil
			continue
		}
		f := &fieldPlan{off: sf.Offset, typ: sf.Type, id: mix(nextID.Add(1)), check: check}
		ft := sf.Type
		switch {
		case ft.Kind() == reflect.Struct && level == 0 && reflect.PointerTo(ft).Implements(unmarshalerType):
			f.kind, f.sub = kindValue, buildPlan(ft, 1)
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			f.kind = kindPointer
		case ft.Kind() == reflect.Slice && (ft.Elem().Kind() == reflect.Struct ||
			ft.Elem().Kind() == reflect.Pointer && ft.Elem().Elem().Kind() == reflect.Struct):
			f.kind = kindSlice
		case ft.Kind() == reflect.Map:
			f.kind = kindMap
		case check == nil:
			continue
		}
		pl.fields[num] = f
	}
	return pl
}

// recordCheck returns, for a field whose value generated code reads up to
// the end of the message rather than of the value's record (a map's
// entry, a repeated scalar's packed values), what tells a value read
// within its record; nil for other fields.
func recordCheck(sf reflect.StructField) func([]byte) bool {
	t := sf.Type
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // a message
	}
	switch t.Kind() {
	case reflect.Map:
		key, val := entryWire(t.Key(), sf.Tag.Get("protobuf_key")), entryWire(t.Elem(), sf.Tag.Get("protobuf_val"))
		return func(v []byte) bool { return entryOK(v, key, val) }
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			w := tagWire(sf.Tag.Get("protobuf"))
			return func(v []byte) bool { return packedOK(v, w) }
		}
	}
	return nil
}

// noWire is no wire type: a record said to be of it is never well formed.
const noWire protowire.Type = -1

// tagWire returns the wire type a protobuf struct tag names.
func tagWire(tag string) protowire.Type {
	enc, _, _ := strings.Cut(tag, ",")
	switch enc {
	case "bytes":
		return protowire.BytesType
	case "varint", "zigzag32", "zigzag64":
		return protowire.VarintType
	case "fixed32":
		return protowire.Fixed32Type
	case "fixed64":
		return protowire.Fixed64Type
	}
	return noWire
}

// entryWire returns the wire type generated code reads a map's key or
// value (of type t) as: the one its tag names, or else its Go type's.
func entryWire(t reflect.Type, tag string) protowire.Type {
	if tag != "" {
		return tagWire(tag)
	}
	switch t.Kind() {
	case reflect.String, reflect.Struct, reflect.Pointer:
		return protowire.BytesType
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 || reflect.PointerTo(t).Implements(unmarshalerType) {
			return protowire.BytesType
		}
	case reflect.Bool, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
		return protowire.VarintType
	case reflect.Float32:
		return protowire.Fixed32Type
	case reflect.Float64:
		return protowire.Fixed64Type
	}
	return noWire
}

// entryOK reports whether generated code reads the map entry v within v:
// its records are whole, and its key's and value's are of the wire types
// that code reads them as (it does not look at theirs).
func entryOK(v []byte, key, val protowire.Type) bool {
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 || num == 1 && typ != key || num == 2 && typ != val {
			return false
		}
		v = v[n:]
		if n = protowire.ConsumeFieldValue(num, typ, v); n < 0 {
			return false
		}
		v = v[n:]
	}
	return true
}

// packedOK reports whether v, packed values of wire type w, ends with the
// end of its last value.
func packedOK(v []byte, w protowire.Type) bool {
	switch w {
	case protowire.VarintType:
		for len(v) > 0 {
			_, n := protowire.ConsumeVarint(v)
			if n < 0 {
				return false
			}
			v = v[n:]
		}
		return true
	case protowire.Fixed32Type:
		return len(v)%4 == 0
	case protowire.Fixed64Type:
		return len(v)%8 == 0
	}
	return false
}

// tagNumber returns the field number of a protobuf struct tag
// ("bytes,2,rep,name=containers"), or 0.
func tagNumber(tag string) protowire.Number {
	_, rest, ok := strings.Cut(tag, ",")
	if !ok {
		return 0
	}
	numStr, _, _ := strings.Cut(rest, ",")
	n, err := strconv.Atoi(numStr)
	if err != nil {
		return 0
	}
	return protowire.Number(n)
}

// mix is a 64-bit finalizer (splitmix64's).
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
