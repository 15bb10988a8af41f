package protomemo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// The tests' message types stand in for k8s.io/api's (the library's
// module imports nothing from k8s.io; Decode against the real types is
// tested in the server module, server/compat/client/memo_test.go). They
// are decoded as gogo's generated Unmarshal methods decode (gogoDec,
// ported from core/v1's generated.pb.go): no reset first, a repeated
// field's records append, a singular message field's records merge into
// the value already there, a map is made at its first entry, unknown
// fields are skipped, a known field of the wrong wire type and a
// truncated record are errors, and every read is bounded by the end of
// the whole message, not by the end of the record it is in.

// testObj is an object: its metadata and spec, messages held by value
// (which Decode splits into their fields), a map of its own (like a
// ConfigMap's data: an object's own fields are not memoized) and a
// scalar. P only gives a test types of its own: what Decode learns of a
// type's fields (how often their lookups hit) is shared by every Memo,
// so a test that depends on it uses a P that no other test uses.
type testObj[P any] struct {
	Meta testMeta          `protobuf:"bytes,1,opt,name=metadata"`
	Spec testSpec          `protobuf:"bytes,2,opt,name=spec"`
	Data map[string]string `protobuf:"bytes,3,rep,name=data"`
	Gen  int64             `protobuf:"varint,4,opt,name=generation"`
}

type testMeta struct {
	Name   string            `protobuf:"bytes,1,opt,name=name"`
	Labels map[string]string `protobuf:"bytes,2,rep,name=labels"`
	Owners []testOwner       `protobuf:"bytes,3,rep,name=owners"`
}

type testOwner struct {
	Kind       string `protobuf:"bytes,1,opt,name=kind"`
	Name       string `protobuf:"bytes,2,opt,name=name"`
	Controller *bool  `protobuf:"varint,3,opt,name=controller"`
}

type testSpec struct {
	Node      string                  `protobuf:"bytes,1,opt,name=node"`
	Items     []testItem              `protobuf:"bytes,2,rep,name=items"`
	Extra     *testExtra              `protobuf:"bytes,3,opt,name=extra"`
	Ports     []int32                 `protobuf:"varint,4,rep,name=ports"`
	Refs      []*testItem             `protobuf:"bytes,5,rep,name=refs"`
	Resources map[string]testQuantity `protobuf:"bytes,6,rep,name=resources"`
	Far       string                  `protobuf:"bytes,70,opt,name=far"` // past maxNum
}

type testItem struct {
	Name   string   `protobuf:"bytes,1,opt,name=name"`
	Args   []string `protobuf:"bytes,2,rep,name=args"`
	Weight int32    `protobuf:"varint,3,opt,name=weight"`
}

type testExtra struct {
	A    string     `protobuf:"bytes,1,opt,name=a"`
	B    int64      `protobuf:"varint,2,opt,name=b"`
	Tags []string   `protobuf:"bytes,3,rep,name=tags"`
	Sub  *testExtra `protobuf:"bytes,4,opt,name=sub"`
}

type testQuantity struct {
	S string `protobuf:"bytes,1,opt,name=s"`
}

// --- Decoding, as generated code does ---

var (
	errIntOverflow   = errors.New("proto: integer overflow")
	errInvalidLength = errors.New("proto: negative length found during unmarshaling")
	errEndOfGroup    = errors.New("proto: unexpected end of group")
)

func wrongWire(typ int, field string) error {
	return fmt.Errorf("proto: wrong wireType = %d for field %s", typ, field)
}

// gogoDec reads one message (b) as its generated Unmarshal does; i is
// iNdEx.
type gogoDec struct {
	b []byte
	i int
}

func (d *gogoDec) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, errIntOverflow
		}
		if d.i >= len(d.b) {
			return 0, io.ErrUnexpectedEOF
		}
		c := d.b[d.i]
		d.i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// tag reads a record's tag (fieldNum is the tag's int32, as generated).
func (d *gogoDec) tag(msg string) (num int32, typ int, err error) {
	w, err := d.varint()
	if err != nil {
		return 0, 0, err
	}
	num, typ = int32(w>>3), int(w&7)
	if typ == 4 {
		return 0, 0, fmt.Errorf("proto: %s: wiretype end group for non-group", msg)
	}
	if num <= 0 {
		return 0, 0, fmt.Errorf("proto: %s: illegal tag %d (wire type %d)", msg, num, w)
	}
	return num, typ, nil
}

// end reads a length and returns where the value after it ends
// (postIndex), checked against the end of the message.
func (d *gogoDec) end() (int, error) {
	v, err := d.varint()
	if err != nil {
		return 0, err
	}
	n := int(v)
	if n < 0 {
		return 0, errInvalidLength
	}
	post := d.i + n
	if post < 0 {
		return 0, errInvalidLength
	}
	if post > len(d.b) {
		return 0, io.ErrUnexpectedEOF
	}
	return post, nil
}

// bytes reads a length-delimited field's value.
func (d *gogoDec) bytes(typ int, field string) ([]byte, error) {
	if typ != 2 {
		return nil, wrongWire(typ, field)
	}
	post, err := d.end()
	if err != nil {
		return nil, err
	}
	v := d.b[d.i:post]
	d.i = post
	return v, nil
}

func (d *gogoDec) str(typ int, field string) (string, error) {
	v, err := d.bytes(typ, field)
	return string(v), err
}

func (d *gogoDec) uvarint(typ int, field string) (uint64, error) {
	if typ != 0 {
		return 0, wrongWire(typ, field)
	}
	return d.varint()
}

// skip skips the unknown field whose record starts at start.
func (d *gogoDec) skip(start int) error {
	d.i = start
	n, err := skipGogo(d.b[d.i:])
	if err != nil {
		return err
	}
	if n < 0 || d.i+n < 0 {
		return errInvalidLength
	}
	if d.i+n > len(d.b) {
		return io.ErrUnexpectedEOF
	}
	d.i += n
	return nil
}

// done is the check that ends a generated Unmarshal.
func (d *gogoDec) done() error {
	if d.i > len(d.b) {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// skipGogo is skipGenerated.
func skipGogo(b []byte) (int, error) {
	l, i, depth := len(b), 0, 0
	for i < l {
		var wire uint64
		for shift := uint(0); ; shift += 7 {
			if shift >= 64 {
				return 0, errIntOverflow
			}
			if i >= l {
				return 0, io.ErrUnexpectedEOF
			}
			c := b[i]
			i++
			wire |= uint64(c&0x7f) << shift
			if c < 0x80 {
				break
			}
		}
		switch wire & 7 {
		case 0:
			for shift := uint(0); ; shift += 7 {
				if shift >= 64 {
					return 0, errIntOverflow
				}
				if i >= l {
					return 0, io.ErrUnexpectedEOF
				}
				i++
				if b[i-1] < 0x80 {
					break
				}
			}
		case 1:
			i += 8
		case 2:
			var n int
			for shift := uint(0); ; shift += 7 {
				if shift >= 64 {
					return 0, errIntOverflow
				}
				if i >= l {
					return 0, io.ErrUnexpectedEOF
				}
				c := b[i]
				i++
				n |= int(c&0x7f) << shift
				if c < 0x80 {
					break
				}
			}
			if n < 0 {
				return 0, errInvalidLength
			}
			i += n
		case 3:
			depth++
		case 4:
			if depth == 0 {
				return 0, errEndOfGroup
			}
			depth--
		case 5:
			i += 4
		default:
			return 0, fmt.Errorf("proto: illegal wireType %d", wire&7)
		}
		if i < 0 {
			return 0, errInvalidLength
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, io.ErrUnexpectedEOF
}

// mapEntry reads the rest of a map record whose value ends at post: a
// key (field 1) and a value (field 2) read with no look at their wire
// types, and bounded by the message's end, as generated code reads them;
// other fields are skipped within the entry.
func (d *gogoDec) mapEntry(post int, key, val func() error) error {
	for d.i < post {
		pre := d.i
		w, err := d.varint()
		if err != nil {
			return err
		}
		switch int32(w >> 3) {
		case 1:
			err = key()
		case 2:
			err = val()
		default:
			d.i = pre
			n, err := skipGogo(d.b[d.i:])
			if err != nil {
				return err
			}
			if n < 0 || d.i+n < 0 {
				return errInvalidLength
			}
			if d.i+n > post {
				return io.ErrUnexpectedEOF
			}
			d.i += n
		}
		if err != nil {
			return err
		}
	}
	d.i = post
	return nil
}

// mapString reads a string key or value of a map entry.
func (d *gogoDec) mapString(s *string) error {
	post, err := d.end()
	if err != nil {
		return err
	}
	*s = string(d.b[d.i:post])
	d.i = post
	return nil
}

func (d *gogoDec) stringMap(typ int, field string, m *map[string]string) error {
	if typ != 2 {
		return wrongWire(typ, field)
	}
	post, err := d.end()
	if err != nil {
		return err
	}
	if *m == nil {
		*m = make(map[string]string)
	}
	var k, v string
	if err := d.mapEntry(post, func() error { return d.mapString(&k) }, func() error { return d.mapString(&v) }); err != nil {
		return err
	}
	(*m)[k] = v
	return nil
}

func (d *gogoDec) quantityMap(typ int, field string, m *map[string]testQuantity) error {
	if typ != 2 {
		return wrongWire(typ, field)
	}
	post, err := d.end()
	if err != nil {
		return err
	}
	if *m == nil {
		*m = make(map[string]testQuantity)
	}
	var k string
	v := &testQuantity{}
	err = d.mapEntry(post, func() error { return d.mapString(&k) }, func() error {
		end, err := d.end()
		if err != nil {
			return err
		}
		v = &testQuantity{}
		if err := v.Unmarshal(d.b[d.i:end]); err != nil {
			return err
		}
		d.i = end
		return nil
	})
	if err != nil {
		return err
	}
	(*m)[k] = *v
	return nil
}

// int32s reads a repeated int32's record, one varint or packed ones: the
// packed varints are read up to the end of the message, and reading goes
// on after the last one (generated code does not go back to the end of
// the record).
func (d *gogoDec) int32s(typ int, field string, s *[]int32) error {
	switch typ {
	case 0:
		v, err := d.varint()
		if err != nil {
			return err
		}
		*s = append(*s, int32(v))
		return nil
	case 2:
		post, err := d.end()
		if err != nil {
			return err
		}
		count := 0
		for _, c := range d.b[d.i:post] {
			if c < 128 {
				count++
			}
		}
		if count != 0 && len(*s) == 0 {
			*s = make([]int32, 0, count)
		}
		for d.i < post {
			v, err := d.varint()
			if err != nil {
				return err
			}
			*s = append(*s, int32(v))
		}
		return nil
	}
	return wrongWire(typ, field)
}

func (m *testObj[P]) Unmarshal(b []byte) error {
	d := &gogoDec{b: b}
	for d.i < len(b) {
		start := d.i
		num, typ, err := d.tag("testObj")
		if err != nil {
			return err
		}
		var v []byte
		switch num {
		case 1:
			if v, err = d.bytes(typ, "Meta"); err == nil {
				err = m.Meta.Unmarshal(v)
			}
		case 2:
			if v, err = d.bytes(typ, "Spec"); err == nil {
				err = m.Spec.Unmarshal(v)
			}
		case 3:
			err = d.stringMap(typ, "Data", &m.Data)
		case 4:
			var u uint64
			u, err = d.uvarint(typ, "Gen")
			m.Gen = int64(u)
		default:
			err = d.skip(start)
		}
		if err != nil {
			return err
		}
	}
	return d.done()
}

func (m *testMeta) Unmarshal(b []byte) error {
	d := &gogoDec{b: b}
	for d.i < len(b) {
		start := d.i
		num, typ, err := d.tag("testMeta")
		if err != nil {
			return err
		}
		var v []byte
		switch num {
		case 1:
			m.Name, err = d.str(typ, "Name")
		case 2:
			err = d.stringMap(typ, "Labels", &m.Labels)
		case 3:
			if v, err = d.bytes(typ, "Owners"); err == nil {
				m.Owners = append(m.Owners, testOwner{})
				err = m.Owners[len(m.Owners)-1].Unmarshal(v)
			}
		default:
			err = d.skip(start)
		}
		if err != nil {
			return err
		}
	}
	return d.done()
}

func (m *testOwner) Unmarshal(b []byte) error {
	d := &gogoDec{b: b}
	for d.i < len(b) {
		start := d.i
		num, typ, err := d.tag("testOwner")
		if err != nil {
			return err
		}
		switch num {
		case 1:
			m.Kind, err = d.str(typ, "Kind")
		case 2:
			m.Name, err = d.str(typ, "Name")
		case 3:
			var u uint64
			if u, err = d.uvarint(typ, "Controller"); err == nil {
				c := u != 0
				m.Controller = &c
			}
		default:
			err = d.skip(start)
		}
		if err != nil {
			return err
		}
	}
	return d.done()
}

func (m *testSpec) Unmarshal(b []byte) error {
	d := &gogoDec{b: b}
	for d.i < len(b) {
		start := d.i
		num, typ, err := d.tag("testSpec")
		if err != nil {
			return err
		}
		var v []byte
		switch num {
		case 1:
			m.Node, err = d.str(typ, "Node")
		case 2:
			if v, err = d.bytes(typ, "Items"); err == nil {
				m.Items = append(m.Items, testItem{})
				err = m.Items[len(m.Items)-1].Unmarshal(v)
			}
		case 3:
			if v, err = d.bytes(typ, "Extra"); err == nil {
				if m.Extra == nil {
					m.Extra = &testExtra{}
				}
				err = m.Extra.Unmarshal(v)
			}
		case 4:
			err = d.int32s(typ, "Ports", &m.Ports)
		case 5:
			if v, err = d.bytes(typ, "Refs"); err == nil {
				m.Refs = append(m.Refs, &testItem{})
				err = m.Refs[len(m.Refs)-1].Unmarshal(v)
			}
		case 6:
			err = d.quantityMap(typ, "Resources", &m.Resources)
		case 70:
			m.Far, err = d.str(typ, "Far")
		default:
			err = d.skip(start)
		}
		if err != nil {
			return err
		}
	}
	return d.done()
}

func (m *testItem) Unmarshal(b []byte) error {
	d := &gogoDec{b: b}
	for d.i < len(b) {
		start := d.i
		num, typ, err := d.tag("testItem")
		if err != nil {
			return err
		}
		switch num {
		case 1:
			m.Name, err = d.str(typ, "Name")
		case 2:
			var s string
			if s, err = d.str(typ, "Args"); err == nil {
				m.Args = append(m.Args, s)
			}
		case 3:
			var u uint64
			u, err = d.uvarint(typ, "Weight")
			m.Weight = int32(u)
		default:
			err = d.skip(start)
		}
		if err != nil {
			return err
		}
	}
	return d.done()
}

func (m *testExtra) Unmarshal(b []byte) error {
	d := &gogoDec{b: b}
	for d.i < len(b) {
		start := d.i
		num, typ, err := d.tag("testExtra")
		if err != nil {
			return err
		}
		var v []byte
		switch num {
		case 1:
			m.A, err = d.str(typ, "A")
		case 2:
			var u uint64
			u, err = d.uvarint(typ, "B")
			m.B = int64(u)
		case 3:
			var s string
			if s, err = d.str(typ, "Tags"); err == nil {
				m.Tags = append(m.Tags, s)
			}
		case 4:
			if v, err = d.bytes(typ, "Sub"); err == nil {
				if m.Sub == nil {
					m.Sub = &testExtra{}
				}
				err = m.Sub.Unmarshal(v)
			}
		default:
			err = d.skip(start)
		}
		if err != nil {
			return err
		}
	}
	return d.done()
}

func (m *testQuantity) Unmarshal(b []byte) error {
	d := &gogoDec{b: b}
	for d.i < len(b) {
		start := d.i
		num, typ, err := d.tag("testQuantity")
		if err != nil {
			return err
		}
		switch num {
		case 1:
			m.S, err = d.str(typ, "S")
		default:
			err = d.skip(start)
		}
		if err != nil {
			return err
		}
	}
	return d.done()
}

// --- Encoding, for the tests' inputs ---

func rec(n protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, n, protowire.BytesType), v)
}

func recStr(n protowire.Number, s string) []byte { return rec(n, []byte(s)) }

func recVarint(n protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, n, protowire.VarintType), v)
}

func cat(parts ...[]byte) []byte { return slices.Concat(parts...) }

func optStr(n protowire.Number, s string) []byte {
	if s == "" {
		return nil
	}
	return recStr(n, s)
}

func mapRecs(n protowire.Number, m map[string]string) []byte {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = append(b, rec(n, cat(recStr(1, k), recStr(2, m[k])))...)
	}
	return b
}

func (m *testObj[P]) Marshal() []byte {
	b := cat(rec(1, m.Meta.marshal()), rec(2, m.Spec.marshal()), mapRecs(3, m.Data))
	if m.Gen != 0 {
		b = append(b, recVarint(4, uint64(m.Gen))...)
	}
	return b
}

func (m *testMeta) marshal() []byte {
	b := cat(optStr(1, m.Name), mapRecs(2, m.Labels))
	for _, o := range m.Owners {
		b = append(b, rec(3, o.marshal())...)
	}
	return b
}

func (m *testOwner) marshal() []byte {
	b := cat(optStr(1, m.Kind), optStr(2, m.Name))
	if m.Controller != nil {
		v := uint64(0)
		if *m.Controller {
			v = 1
		}
		b = append(b, recVarint(3, v)...)
	}
	return b
}

// marshal writes Ports packed when there are more than two, else a
// record each (generated decoders take both).
func (m *testSpec) marshal() []byte {
	b := optStr(1, m.Node)
	for _, it := range m.Items {
		b = append(b, rec(2, it.marshal())...)
	}
	if m.Extra != nil {
		b = append(b, rec(3, m.Extra.marshal())...)
	}
	if len(m.Ports) > 2 {
		var p []byte
		for _, v := range m.Ports {
			p = protowire.AppendVarint(p, uint64(v))
		}
		b = append(b, rec(4, p)...)
	} else {
		for _, v := range m.Ports {
			b = append(b, recVarint(4, uint64(v))...)
		}
	}
	for _, it := range m.Refs {
		b = append(b, rec(5, it.marshal())...)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Resources)) {
		b = append(b, rec(6, cat(recStr(1, k), rec(2, optStr(1, m.Resources[k].S))))...)
	}
	return append(b, optStr(70, m.Far)...)
}

func (m *testItem) marshal() []byte {
	b := optStr(1, m.Name)
	for _, a := range m.Args {
		b = append(b, recStr(2, a)...)
	}
	if m.Weight != 0 {
		b = append(b, recVarint(3, uint64(m.Weight))...)
	}
	return b
}

func (m *testExtra) marshal() []byte {
	b := optStr(1, m.A)
	if m.B != 0 {
		b = append(b, recVarint(2, uint64(m.B))...)
	}
	for _, s := range m.Tags {
		b = append(b, recStr(3, s)...)
	}
	if m.Sub != nil {
		b = append(b, rec(4, m.Sub.marshal())...)
	}
	return b
}

// --- Samples ---

// testSamples returns sets*per objects: the per replicas of a set have
// byte-identical labels, owners, items, extra, refs and resources (some
// sets lack some of them), and differ in name, node, ports, data and
// generation.
func testSamples[P any](sets, per int) []*testObj[P] {
	var objs []*testObj[P]
	for s := range sets {
		for r := range per {
			ctrl := s%2 == 0
			o := &testObj[P]{
				Meta: testMeta{
					Name:   fmt.Sprintf("set%d-%d", s, r),
					Labels: map[string]string{"app": fmt.Sprint("app", s), "tier": "web", "hash": fmt.Sprintf("%08x", s*7919)},
					Owners: []testOwner{{Kind: "Set", Name: fmt.Sprint("set", s), Controller: &ctrl}},
				},
				Spec: testSpec{
					Node: fmt.Sprint("node-", r%3),
					Items: []testItem{
						{Name: "main", Args: []string{"--set", fmt.Sprint(s)}, Weight: int32(s)},
						{Name: "side", Weight: -1},
					},
					Ports: []int32{int32(8000 + r), 9090},
					Refs:  []*testItem{{Name: fmt.Sprint("ref", s)}},
					Resources: map[string]testQuantity{
						"cpu": {S: fmt.Sprint(s%3 + 1)}, "memory": {S: "1Gi"},
					},
				},
				Gen: int64(r + 1),
			}
			if r%2 == 1 {
				o.Spec.Ports = append(o.Spec.Ports, -int32(r)) // packed, with a ten-byte varint
				o.Data = map[string]string{"replica": fmt.Sprint(r)}
			}
			if s%2 == 1 {
				// Three: an append leaves spare capacity.
				o.Spec.Items = append(o.Spec.Items, testItem{Name: "third"})
			}
			if s%3 != 0 {
				o.Spec.Extra = &testExtra{A: fmt.Sprint("a", s), B: int64(s), Tags: []string{"x", "y"}, Sub: &testExtra{A: "sub"}}
			}
			if s%4 == 1 {
				o.Meta.Labels, o.Spec.Refs = nil, nil
			}
			if s == 2 {
				o.Spec.Far = "far"
			}
			objs = append(objs, o)
		}
	}
	return objs
}

// memoGroups returns the keys Decode looks o's parts up by (each
// memoized field's name and records), in memoParts' order, "" for a part
// o lacks.
func memoGroups[P any](o *testObj[P]) []string {
	var g []string
	add := func(name string, b []byte) {
		if len(b) == 0 {
			g = append(g, "")
		} else {
			g = append(g, name+":"+string(b))
		}
	}
	add("labels", (&testMeta{Labels: o.Meta.Labels}).marshal())
	add("owners", (&testMeta{Owners: o.Meta.Owners}).marshal())
	add("items", (&testSpec{Items: o.Spec.Items}).marshal())
	add("extra", (&testSpec{Extra: o.Spec.Extra}).marshal())
	add("refs", (&testSpec{Refs: o.Spec.Refs}).marshal())
	add("resources", (&testSpec{Resources: o.Spec.Resources}).marshal())
	return g
}

// part is one of an object's memoized parts: its pointer word (a map's,
// a slice's data, a pointer), and a slice's length and capacity.
type part struct {
	name     string
	word     unsafe.Pointer
	len, cap int
}

func memoParts[P any](o *testObj[P]) []part {
	return []part{
		{"labels", reflect.ValueOf(o.Meta.Labels).UnsafePointer(), 0, 0},
		{"owners", unsafe.Pointer(unsafe.SliceData(o.Meta.Owners)), len(o.Meta.Owners), cap(o.Meta.Owners)},
		{"items", unsafe.Pointer(unsafe.SliceData(o.Spec.Items)), len(o.Spec.Items), cap(o.Spec.Items)},
		{"extra", unsafe.Pointer(o.Spec.Extra), 0, 0},
		{"refs", unsafe.Pointer(unsafe.SliceData(o.Spec.Refs)), len(o.Spec.Refs), cap(o.Spec.Refs)},
		{"resources", reflect.ValueOf(o.Spec.Resources).UnsafePointer(), 0, 0},
	}
}

// decodeBoth decodes b with Unmarshal and with m, and fails t unless
// both fail or both give the same object; it returns m's.
func decodeBoth[P any](t testing.TB, m *Memo, b []byte, what string) *testObj[P] {
	t.Helper()
	want, got := new(testObj[P]), new(testObj[P])
	wantErr := want.Unmarshal(b)
	err := m.Decode(got, b)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: Decode: %v; Unmarshal: %v (input %x)", what, err, wantErr, b)
	}
	if err == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%s: Decode gave\n%+v\nUnmarshal\n%+v\n(input %x)", what, got, want, b)
	}
	return got
}

// --- Tests ---

// TestDecodeSameAsUnmarshal: Decode gives what Unmarshal gives, the
// first time (misses) and again (hits); a hit shares the part decoded
// before, the memo owns it, a shared slice has no spare capacity, the
// parts Decode does not memoize are decoded anew, and Stats counts a
// miss for each distinct part and a hit for every other lookup.
func TestDecodeSameAsUnmarshal(t *testing.T) {
	type P struct{}
	objs := testSamples[P](6, 5)
	distinct := map[string]bool{}
	groups := 0
	for _, o := range objs {
		for _, g := range memoGroups(o) {
			if g != "" {
				distinct[g] = true
				groups++
			}
		}
	}
	m := New()
	var first []*testObj[P]
	for round := range 2 {
		for i, o := range objs {
			b := o.Marshal()
			var u testObj[P]
			if err := u.Unmarshal(b); err != nil || !reflect.DeepEqual(&u, o) {
				t.Fatalf("the test's own Marshal and Unmarshal: %v\n%+v\n%+v", err, &u, o)
			}
			got := decodeBoth[P](t, m, b, fmt.Sprintf("object %d, round %d", i, round))
			for _, p := range memoParts(got) {
				if p.word == nil {
					continue
				}
				if p.cap != p.len {
					t.Errorf("object %d, round %d: %s has len %d, cap %d: an append would write into another object's", i, round, p.name, p.len, p.cap)
				}
				if o := m.Owner(p.word); o == nil || o.Len != p.len {
					t.Errorf("object %d, round %d: Owner of %s = %+v, want one of Len %d", i, round, p.name, o, p.len)
				}
			}
			if round == 0 {
				first = append(first, got)
				continue
			}
			if !slices.Equal(memoParts(first[i]), memoParts(got)) {
				t.Errorf("object %d: decoded again, its parts are not those decoded before:\n%v\n%v", i, memoParts(first[i]), memoParts(got))
			}
			if unsafe.SliceData(first[i].Spec.Ports) == unsafe.SliceData(got.Spec.Ports) ||
				first[i].Data != nil && reflect.ValueOf(first[i].Data).UnsafePointer() == reflect.ValueOf(got.Data).UnsafePointer() {
				t.Errorf("object %d: ports or data shared: Decode memoizes only the fields of metadata and spec that are messages, slices of them or maps", i)
			}
		}
		hits, misses := m.Stats()
		if want := int64(len(distinct)); misses != want {
			t.Errorf("round %d: %d misses, want %d (the distinct parts)", round, misses, want)
		}
		if want := int64((round+1)*groups - len(distinct)); hits != want {
			t.Errorf("round %d: %d hits, want %d", round, hits, want)
		}
	}
	// Replicas share their parts (set 0 has them all).
	if !slices.Equal(memoParts(first[0]), memoParts(first[1])) || memoParts(first[0])[0].word == nil {
		t.Errorf("two replicas' parts are not shared:\n%v\n%v", memoParts(first[0]), memoParts(first[1]))
	}
	if first[0].Spec.Extra != nil || first[5].Spec.Extra == nil || first[5].Spec.Extra != first[6].Spec.Extra {
		t.Error("set 1's replicas do not share their extra")
	}
}

// testCases are inputs whose records are not as a Marshal writes them.
func testCases() []struct {
	name string
	b    []byte
} {
	meta := func(parts ...[]byte) []byte { return rec(1, cat(parts...)) }
	spec := func(parts ...[]byte) []byte { return rec(2, cat(parts...)) }
	item := func(name string, args ...string) []byte {
		return rec(2, (&testItem{Name: name, Args: args, Weight: 3}).marshal())
	}
	label := func(k, v string) []byte { return rec(2, cat(recStr(1, k), recStr(2, v))) }
	owner := func(name string) []byte { return rec(3, (&testOwner{Kind: "Set", Name: name}).marshal()) }
	extra := func(e testExtra) []byte { return rec(3, e.marshal()) }
	tag := func(n protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, n, typ) }
	fixed32 := func(n protowire.Number) []byte { return protowire.AppendFixed32(tag(n, protowire.Fixed32Type), 7) }
	fixed64 := func(n protowire.Number) []byte { return protowire.AppendFixed64(tag(n, protowire.Fixed64Type), 7) }
	group := func(n protowire.Number, inner ...[]byte) []byte {
		return cat(tag(n, protowire.StartGroupType), cat(inner...), tag(n, protowire.EndGroupType))
	}
	unknowns := func(base protowire.Number) []byte {
		return cat(recVarint(base, 1), fixed32(base+1), fixed64(base+2), recStr(base+3, "u"),
			group(base+4, recVarint(1, 1), group(2, recStr(3, "g"))), recStr(1000, "far"), recVarint(1<<29-1, 5))
	}
	packed := func(vs ...uint64) []byte {
		var p []byte
		for _, v := range vs {
			p = protowire.AppendVarint(p, v)
		}
		return rec(4, p)
	}
	spec0 := spec(recStr(1, "n"), item("a"), item("b", "x"))
	meta0 := meta(recStr(1, "o"), label("app", "web"), owner("s"))
	return []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"empty metadata and spec", cat(rec(1, nil), rec(2, nil))},
		{"metadata and spec only", cat(meta0, spec0)},
		{"repeated field not consecutive", cat(meta0, spec(item("a"), recStr(1, "n"), item("b")))},
		{"repeated field once, the first of the case before", cat(meta0, spec(item("a")))},
		{"repeated field split around an unknown field", cat(meta0, spec(item("a"), recStr(9, "u"), item("b"), item("c")))},
		{"repeated field split around an unknown field past 63", cat(meta0, spec(item("a"), recStr(100, "u"), item("b")))},
		{"map split around another field", cat(meta(label("a", "1"), recStr(1, "o"), label("b", "2")), spec0)},
		{"map once, the first of the case before", cat(meta(label("a", "1")), spec0)},
		{"map split around an unknown field", cat(meta(label("a", "1"), recVarint(9, 1), label("a", "2")), spec0)},
		{"owners split around labels", cat(meta(owner("a"), label("a", "1"), owner("b")), spec0)},
		{"map with duplicate keys", cat(meta(label("k", "1"), label("k", "2"), label("j", "3")), spec0)},
		{"map entries odd", cat(meta(
			rec(2, cat(recStr(2, "v-first"), recStr(1, "k"))),
			rec(2, cat(recStr(1, "k2"), recVarint(7, 1), recStr(2, "v"), recStr(2, "v-again"))),
			rec(2, recStr(2, "no key")),
			rec(2, recStr(1, "no value")),
			rec(2, nil),
		), spec0)},
		{"map with message values", cat(meta0, spec(
			rec(6, cat(recStr(1, "cpu"), rec(2, recStr(1, "1")), rec(2, recStr(9, "only unknown")))),
			rec(6, cat(recStr(1, "mem"), rec(2, cat(recStr(1, "a"), recStr(1, "b"))))),
		))},
		{"singular message twice, consecutive (merged)", cat(meta0, spec(
			extra(testExtra{A: "1", B: 1, Tags: []string{"x"}, Sub: &testExtra{A: "s1", Tags: []string{"t"}}}),
			extra(testExtra{B: 2, Tags: []string{"y"}, Sub: &testExtra{B: 3}}),
		))},
		{"singular message twice, apart (merged)", cat(meta0, spec(
			extra(testExtra{A: "1", Sub: &testExtra{A: "s1"}}), recStr(1, "n"),
			extra(testExtra{A: "2", Tags: []string{"y"}}),
		))},
		// The cases after one whose field's records are apart have one of
		// those records alone, the first: what the memo remembers of it
		// was not merged into or appended to.
		{"singular message once, the first of the case before", cat(meta0, spec(extra(testExtra{A: "1", Sub: &testExtra{A: "s1"}})))},
		{"metadata twice, consecutive (merged)", cat(meta(recStr(1, "a"), label("k", "1"), owner("x")), meta(label("j", "2"), owner("y")), spec0)},
		{"metadata twice, apart (merged)", cat(meta(recStr(1, "a"), label("k", "1")), spec0, meta(recStr(1, "b"), label("k", "2"), owner("y")))},
		{"spec twice, apart (merged)", cat(spec(item("a"), extra(testExtra{A: "1"})), meta0, spec(item("b"), extra(testExtra{B: 2})))},
		{"spec before metadata", cat(spec0, recVarint(4, 9), meta0)},
		{"known field past 63", cat(meta0, spec(recStr(70, "far"), item("a"), recStr(70, "farther")))},
		{"unknown fields at every level", cat(unknowns(20), meta(unknowns(10), label("a", "1"), rec(2, cat(unknowns(5), recStr(1, "k"), recStr(2, "v"))), owner("o")),
			spec(unknowns(20), item("a"), rec(2, cat((&testItem{Name: "i"}).marshal(), unknowns(10))), item("b")), unknowns(40))},
		{"ports packed and not, around items", cat(meta0, spec(recVarint(4, 1), packed(2, 3, 1<<40), item("a"), recVarint(4, 4), packed(), packed(5)))},
		{"refs and items interleaved", cat(meta0, spec(rec(5, recStr(1, "r1")), item("a"), rec(5, recStr(1, "r2")), rec(5, nil)))},
		{"wrong wire type: metadata", cat(recVarint(1, 1), spec0)},
		{"wrong wire type: metadata as a group", cat(group(1, recStr(1, "a")), spec0)},
		{"wrong wire type: items", cat(meta0, spec(item("a"), recVarint(2, 1)))},
		{"wrong wire type: items only", cat(meta0, spec(recVarint(2, 1)))},
		{"wrong wire type: labels", cat(meta(label("a", "1"), fixed32(2)), spec0)},
		{"wrong wire type: extra", cat(meta0, spec(fixed64(3)))},
		{"wrong wire type: node", cat(meta0, spec(recVarint(1, 1), item("a")))},
		{"wrong wire type: ports", cat(meta0, spec(fixed32(4), item("a")))},
		{"wrong wire type: generation", cat(meta0, recStr(4, "x"))},
		{"wrong wire type inside an item", cat(meta0, spec(item("a"), rec(2, recVarint(1, 1))))},
		{"wrong wire type inside a label", cat(meta(rec(2, fixed64(9)), label("a", "1")), spec0)},
		{"end group at the top", cat(meta0, tag(5, protowire.EndGroupType))},
		{"end group in the spec", cat(meta0, spec(item("a"), tag(5, protowire.EndGroupType)))},
		{"group with a mismatched end (generated code takes it)", cat(meta0, spec(item("a"), tag(9, protowire.StartGroupType), recVarint(1, 1), tag(8, protowire.EndGroupType)))},
		{"reserved wire type", cat(meta0, spec(item("a"), tag(9, 6)))},
		{"field number 0", cat(meta0, []byte{0x02, 0x00})},
		{"tag number past int32 (generated code reads field 2)", cat(meta0, protowire.AppendVarint(nil, (1<<32+2)<<3|2), []byte{0}, item("a"))},
		{"ten-byte varint that protowire refuses", cat(meta0, spec0, []byte{0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})},
		{"length past the end", cat(meta0, []byte{0x12, 0x10, 0x0a})},
		{"truncated item", cat(meta0, spec(item("a"), []byte{0x12, 0x05, 0x0a}))},
		{"truncated tag", cat(meta0, spec0, []byte{0x80})},
		{"overflowing varint", cat(meta0, []byte{0x20}, bytes.Repeat([]byte{0x80}, 11), []byte{0x01})},
	}
}

// TestDecodeWireEdgeCases: inputs whose records are interleaved,
// repeated, unknown, of the wrong wire type or truncated decode as
// Unmarshal decodes them (or fail as it fails), first and again, in a
// memo that has seen the samples.
func TestDecodeWireEdgeCases(t *testing.T) {
	type P struct{}
	m := New()
	for _, o := range testSamples[P](3, 3) {
		decodeBoth[P](t, m, o.Marshal(), "sample")
	}
	for _, c := range testCases() {
		for round := range 2 {
			decodeBoth[P](t, m, c.b, fmt.Sprintf("%s, round %d", c.name, round))
		}
	}
	// Every prefix of an object: truncated input.
	b := testSamples[P](2, 1)[1].Marshal()
	for n := range len(b) {
		decodeBoth[P](t, m, b[:n], fmt.Sprintf("first %d bytes", n))
	}
}

// TestDecodeManyRecordsOfOneField: a field of more than 255 records
// decodes exactly, its records consecutive (then memoized) or not; the
// records of a field left to the parent's Unmarshal are not added to a
// part the memo remembers.
func TestDecodeManyRecordsOfOneField(t *testing.T) {
	type P struct{}
	item := func(i int) []byte { return rec(2, (&testItem{Name: fmt.Sprint(i)}).marshal()) }
	label := func(k, v string) []byte { return rec(2, cat(recStr(1, k), recStr(2, v))) }
	run := func(n int, value string) (labels, items []byte) {
		for i := range n {
			labels = append(labels, label(fmt.Sprint("k", i), value)...)
			items = append(items, item(i+1)...)
		}
		return labels, items
	}
	labels255, items255 := run(255, "late")
	labels300, items300 := run(300, "v")
	// One record, another field, then 255 more of the first field.
	apart := cat(rec(1, cat(label("k0", "early"), recStr(1, "name"), labels255)), rec(2, cat(item(0), recStr(1, "node"), items255)))
	together := cat(rec(1, labels300), rec(2, items300))
	alone := cat(rec(1, labels255), rec(2, items255))
	m := New()
	for round := range 2 {
		decodeBoth[P](t, m, apart, fmt.Sprint("records apart, round ", round))
		decodeBoth[P](t, m, alone, fmt.Sprint("the 255 records alone, round ", round))
		hits, _ := m.Stats()
		got := decodeBoth[P](t, m, together, fmt.Sprint("300 consecutive records, round ", round))
		if h, _ := m.Stats(); round == 1 && (h != hits+2 || m.Owner(unsafe.Pointer(unsafe.SliceData(got.Spec.Items))) == nil) {
			t.Fatalf("300 consecutive records decoded again: %d hits, want 2 (labels and items), items owned: %v", h-hits, m.Owner(unsafe.Pointer(unsafe.SliceData(got.Spec.Items))))
		}
	}
}

// TestDecodeRecordsReadPastTheirEnd: generated code reads a malformed
// map entry or packed field on past the end of its record, into the
// records after it; Decode, which decodes records apart from those
// after them, decodes such a message whole, as Unmarshal does.
func TestDecodeRecordsReadPastTheirEnd(t *testing.T) {
	type P struct{}
	item := rec(2, (&testItem{Name: "i"}).marshal())
	// An entry whose key says 5 bytes and has 1: the key takes the 4
	// bytes after the entry.
	overlong := rec(2, []byte{0x0a, 0x05, 'a'})
	for _, c := range []struct {
		name string
		b    []byte
	}{
		// Labels (memoized, decoded alone) then the name.
		{"labels entry", cat(rec(1, cat(overlong, recStr(1, "name-x"))), rec(2, item))},
		// Labels, then owners (memoized) and the name: the labels, left to
		// the parent's Unmarshal with the name, would read into the name.
		{"labels entry before owners", cat(rec(1, cat(recStr(1, "name-x"), rec(3, recStr(1, "k")), overlong, rec(3, recStr(1, "owner")), recStr(1, "name-y"))), rec(2, item))},
		// A resources entry whose value says 2 bytes and has none: it is
		// the unknown field after the entry.
		{"resources entry value", cat(rec(2, cat(rec(6, []byte{0x0a, 0x01, 'c', 0x12, 0x02}), recVarint(9, 1))))},
		// Data, the object's own map, before the metadata (split off).
		{"data entry", cat(rec(3, []byte{0x0a, 0x05, 'a'}), rec(1, recStr(1, "name-x")), rec(2, item))},
		// Packed ports whose last varint does not end: generated code reads
		// on into the items' tag, then takes the items' length (0x0a) for
		// a tag, the node's, and its first byte for the node's length.
		{"packed ports", cat(rec(2, cat([]byte{0x22, 0x01, 0x80}, []byte{0x12, 0x0a, 0x09}, []byte("node-xyzw"))))},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			for round := range 2 {
				decodeBoth[P](t, m, c.b, fmt.Sprint("round ", round))
			}
		})
	}
}

// TestRecordChecks: which values of a map or a repeated scalar Decode
// takes for read within their record; a message with such a field
// numbered past maxNum is decoded whole.
func TestRecordChecks(t *testing.T) {
	type fields struct {
		Labels map[string]string       `protobuf:"bytes,1,rep,name=labels"`
		Counts map[int32]testQuantity  `protobuf:"bytes,2,rep,name=counts"`
		Fixed  map[int32]int32         `protobuf:"bytes,3,rep,name=fixed" protobuf_key:"fixed32,1,opt,name=key" protobuf_val:"zigzag32,2,opt,name=value"`
		Ports  []int32                 `protobuf:"varint,4,rep,name=ports"`
		Floats []float64               `protobuf:"fixed64,5,rep,name=floats"`
		Names  []string                `protobuf:"bytes,6,rep,name=names"`
		Raw    []byte                  `protobuf:"bytes,7,opt,name=raw"`
		Items  []testItem              `protobuf:"bytes,8,rep,name=items"`
		Odd    map[string]chan int     `protobuf:"bytes,9,rep,name=odd"`
		Rs     map[string]testQuantity `protobuf:"bytes,10,rep,name=rs"`
	}
	pl := buildPlan(reflect.TypeFor[fields](), 1)
	tag := func(n protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, n, typ) }
	for _, c := range []struct {
		num  int
		v    []byte
		want bool
	}{
		{1, cat(recStr(1, "k"), recStr(2, "v")), true},
		{1, nil, true},
		{1, cat(recStr(2, "v"), recStr(1, "k"), recVarint(3, 1)), true},
		{1, []byte{0x0a, 0x05, 'a'}, false},           // key past the entry
		{1, cat(recVarint(1, 5)), false},              // a key read as a string
		{1, cat(recStr(1, "k"), []byte{0x80}), false}, // a tag that does not end
		{1, cat(recStr(1, "k"), tag(3, protowire.EndGroupType)), false},
		{2, cat(recVarint(1, 5), rec(2, recStr(1, "q"))), true},
		{2, cat(recStr(1, "k")), false},
		{3, cat(protowire.AppendFixed32(tag(1, protowire.Fixed32Type), 1), recVarint(2, 3)), true},
		{3, cat(recVarint(1, 1)), false},
		{4, protowire.AppendVarint(protowire.AppendVarint(nil, 1), 1<<40), true},
		{4, nil, true},
		{4, []byte{0x01, 0x80}, false},
		{5, make([]byte, 16), true},
		{5, make([]byte, 12), false},
		{9, cat(recStr(1, "k")), true},
		{9, cat(recStr(2, "v")), false},
		{10, cat(recStr(1, "k"), rec(2, []byte{0x0a, 0x09})), true}, // the value's own Unmarshal is bounded
	} {
		f := pl.fields[c.num]
		if f == nil || f.check == nil {
			t.Fatalf("field %d: no check", c.num)
		}
		if got := f.check(c.v); got != c.want {
			t.Errorf("field %d, value %x: check = %v, want %v", c.num, c.v, got, c.want)
		}
	}
	for _, n := range []int{6, 7} {
		if f := pl.fields[n]; f != nil {
			t.Errorf("field %d (strings, bytes) has a plan: %+v", n, f)
		}
	}
	if f := pl.fields[8]; f == nil || f.check != nil || f.kind != kindSlice {
		t.Errorf("field 8 (messages): %+v", f)
	}
	if pl.whole {
		t.Error("decoded whole, with no field past maxNum")
	}
	type far struct {
		Name   string            `protobuf:"bytes,1,opt,name=name"`
		Labels map[string]string `protobuf:"bytes,70,rep,name=labels"`
	}
	type farString struct {
		Name string `protobuf:"bytes,70,opt,name=name"`
	}
	if !buildPlan(reflect.TypeFor[far](), 1).whole || buildPlan(reflect.TypeFor[farString](), 1).whole {
		t.Error("a map numbered past maxNum does not make a message decoded whole, or a string does")
	}
}

// farObj has a map numbered past maxNum, whose records Decode does not
// see: it decodes such an object whole.
type farObj struct {
	Meta testMeta          `protobuf:"bytes,1,opt,name=metadata"`
	Far  map[string]string `protobuf:"bytes,70,rep,name=far"`
}

func (m *farObj) Unmarshal(b []byte) error {
	d := &gogoDec{b: b}
	for d.i < len(b) {
		start := d.i
		num, typ, err := d.tag("farObj")
		if err != nil {
			return err
		}
		var v []byte
		switch num {
		case 1:
			if v, err = d.bytes(typ, "Meta"); err == nil {
				err = m.Meta.Unmarshal(v)
			}
		case 70:
			err = d.stringMap(typ, "Far", &m.Far)
		default:
			err = d.skip(start)
		}
		if err != nil {
			return err
		}
	}
	return d.done()
}

// TestDecodeWholeWithFarMap: an object with a map numbered past maxNum is
// decoded whole, malformed entry or not, and Supports says so.
func TestDecodeWholeWithFarMap(t *testing.T) {
	meta := rec(1, cat(recStr(1, "name-x"), rec(2, cat(recStr(1, "k"), recStr(2, "v")))))
	m := New()
	for _, b := range [][]byte{
		cat(rec(70, cat(recStr(1, "k"), recStr(2, "v"))), meta),
		cat(rec(70, []byte{0x0a, 0x05, 'a'}), meta), // its key reads into the metadata
	} {
		for round := range 2 {
			var want, got farObj
			wantErr, err := want.Unmarshal(b), m.Decode(&got, b)
			if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(&want, &got) {
				t.Fatalf("input %x, round %d: Decode gave %+v, %v; Unmarshal %+v, %v", b, round, &got, err, &want, wantErr)
			}
		}
	}
	if Supports(reflect.TypeFor[*farObj]()) {
		t.Error("Supports(*farObj) = true")
	}
	if hits, misses := m.Stats(); hits != 0 || misses != 0 {
		t.Errorf("Stats() = %d, %d: something was looked up", hits, misses)
	}
}

// TestDecodeMutatedBytes: an object with each byte changed, removed or
// doubled decodes as Unmarshal decodes it (a deterministic fuzz).
func TestDecodeMutatedBytes(t *testing.T) {
	type P struct{}
	m := New()
	objs := testSamples[P](3, 2)
	for _, o := range objs {
		decodeBoth[P](t, m, o.Marshal(), "sample")
	}
	for k, o := range objs[2:5] {
		b := o.Marshal()
		for i := range b {
			for _, c := range []byte{0, 1, 0x7f, 0x80, 0xff, b[i] ^ 1, b[i] ^ 0x80, b[i] + 8} {
				mb := bytes.Clone(b)
				mb[i] = c
				decodeBoth[P](t, m, mb, fmt.Sprintf("object %d, byte %d set to %#x", k, i, c))
			}
			decodeBoth[P](t, m, slices.Delete(bytes.Clone(b), i, i+1), fmt.Sprintf("object %d, byte %d removed", k, i))
			decodeBoth[P](t, m, slices.Insert(bytes.Clone(b), i, b[i]), fmt.Sprintf("object %d, byte %d doubled", k, i))
		}
	}
}

// TestOwnerAndReset: Owner knows each part a Memo handed out (by a
// pointer's, a map's or a slice's data word, with the slice's length),
// and nothing else; MarkWalked and Walked keep what the sharing walk
// made of a part; after Reset, Owner knows none and the same parts miss
// again, and are decoded anew.
func TestOwnerAndReset(t *testing.T) {
	type P struct{}
	m := New()
	o := testSamples[P](2, 1)[1] // set 1: all its parts but labels and refs
	o.Meta.Labels, o.Spec.Refs = map[string]string{"a": "b"}, []*testItem{{Name: "r"}, {}}
	b := o.Marshal()
	got := decodeBoth[P](t, m, b, "first")
	parts := memoParts(got)
	for _, p := range parts {
		if p.word == nil {
			t.Fatalf("%s missing", p.name)
		}
		ow := m.Owner(p.word)
		if ow == nil || ow.Len != p.len {
			t.Fatalf("Owner of %s = %+v, want one of Len %d", p.name, ow, p.len)
		}
		if c, ok := ow.Walked(); ok || c != nil {
			t.Fatalf("%s walked before MarkWalked", p.name)
		}
		canon := unsafe.Pointer(new(int))
		ow.MarkWalked(canon)
		if c, ok := ow.Walked(); !ok || c != canon {
			t.Fatalf("%s: Walked() = %v, %v after MarkWalked(%v)", p.name, c, ok, canon)
		}
		if m.Owner(p.word) != ow {
			t.Fatalf("%s: Owner gives another Owned the second time", p.name)
		}
	}
	for _, p := range []unsafe.Pointer{nil, unsafe.Pointer(&got.Spec), unsafe.Pointer(unsafe.SliceData(got.Spec.Ports)),
		unsafe.Pointer(got.Spec.Extra.Sub), unsafe.Pointer(got.Spec.Refs[0]), unsafe.Pointer(unsafe.StringData(got.Meta.Name))} {
		if ow := m.Owner(p); ow != nil {
			t.Fatalf("Owner(%v) = %+v for a value the memo did not hand out", p, ow)
		}
	}
	var nilMemo *Memo
	if nilMemo.Owner(parts[0].word) != nil {
		t.Fatal("a nil Memo owns something")
	}
	again := decodeBoth[P](t, m, b, "second")
	if !slices.Equal(memoParts(again), parts) {
		t.Fatal("not shared before Reset")
	}
	hits, misses := m.Stats()
	if hits != int64(len(parts)) || misses != int64(len(parts)) {
		t.Fatalf("Stats() = %d, %d; want %d, %d", hits, misses, len(parts), len(parts))
	}

	m.Reset()
	for _, p := range parts {
		if ow := m.Owner(p.word); ow != nil {
			t.Fatalf("after Reset, Owner of %s = %+v", p.name, ow)
		}
	}
	after := decodeBoth[P](t, m, b, "after Reset")
	if h, mi := m.Stats(); h != hits || mi != misses+int64(len(parts)) {
		t.Fatalf("after Reset, Stats() = %d, %d; want %d, %d", h, mi, hits, misses+int64(len(parts)))
	}
	for i, p := range memoParts(after) {
		if p.word == parts[i].word {
			t.Fatalf("after Reset, %s is the one decoded before", p.name)
		}
		if ow := m.Owner(p.word); ow == nil || ow.Len != p.len {
			t.Fatalf("after Reset, Owner of the new %s = %+v", p.name, ow)
		}
		if _, ok := m.Owner(p.word).Walked(); ok {
			t.Fatalf("after Reset, the new %s is walked", p.name)
		}
	}
}

// TestDecodeOverMaxBytes: once the parts a Memo remembers add up to
// maxBytes, it decodes on exactly but remembers nothing more: other
// parts miss each time and are not owned; those remembered still hit.
func TestDecodeOverMaxBytes(t *testing.T) {
	type P struct{}
	objs := testSamples[P](4, 2)
	m := New()
	m.maxBytes = 0
	stored := map[string]bool{}
	for _, g := range memoGroups(objs[0]) {
		if g != "" {
			_, key, _ := strings.Cut(g, ":")
			m.maxBytes += int64(len(key))
			stored[g] = true
		}
	}
	for round := range 2 {
		for i, o := range objs {
			_, before := m.Stats()
			got := decodeBoth[P](t, m, o.Marshal(), fmt.Sprintf("object %d, round %d", i, round))
			_, after := m.Stats()
			groups, parts := memoGroups(o), memoParts(got)
			var want int64
			for k, g := range groups {
				if g == "" {
					continue
				}
				if !stored[g] || round == 0 && i == 0 {
					want++
				}
				if owned := m.Owner(parts[k].word) != nil; owned != stored[g] {
					t.Errorf("object %d, round %d: %s owned: %v, want %v", i, round, parts[k].name, owned, stored[g])
				}
			}
			if after-before != want {
				t.Errorf("object %d, round %d: %d misses, want %d", i, round, after-before, want)
			}
		}
	}
	if kb := m.keyBytes.Load(); kb != m.maxBytes {
		t.Errorf("remembers %d bytes, want %d", kb, m.maxBytes)
	}
}

// TestDecodeTriesRareHitsSeldom: a field whose bytes never repeat is
// looked up in each of its first 32 objects, then in about one in 32,
// and Decode stays exact throughout.
func TestDecodeTriesRareHitsSeldom(t *testing.T) {
	type P struct{}
	m := New()
	var tried []int
	for i := range 32 + 32*10 {
		o := &testObj[P]{Meta: testMeta{Name: fmt.Sprint(i)}, Spec: testSpec{Items: []testItem{{Name: fmt.Sprint("unique-", i)}}}}
		_, before := m.Stats()
		decodeBoth[P](t, m, o.Marshal(), fmt.Sprint("object ", i))
		_, after := m.Stats()
		switch after - before {
		case 0:
		case 1:
			tried = append(tried, i)
		default:
			t.Fatalf("object %d: %d lookups, want at most 1", i, after-before)
		}
	}
	if len(tried) < 32 || tried[31] != 31 {
		t.Fatalf("looked up in objects %v, want in each of the first 32", tried)
	}
	if later := len(tried) - 32; later < 9 || later > 11 {
		t.Fatalf("looked up in %d of the 320 objects after the first 32 (%v), want about one in 32", later, tried[32:])
	}
	// Another type's fields are the other type's: this one's first lookups
	// are all tried.
	type Q struct{}
	_, before := m.Stats()
	for i := range 8 {
		o := &testObj[Q]{Spec: testSpec{Items: []testItem{{Name: fmt.Sprint("unique-", i)}}}}
		decodeBoth[Q](t, m, o.Marshal(), fmt.Sprint("Q object ", i))
	}
	if _, after := m.Stats(); after-before != 8 {
		t.Fatalf("another type: %d lookups in 8 objects, want 8", after-before)
	}
}

type rawMsg []byte

func (r *rawMsg) Unmarshal(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// TestSupports: a pointer to a struct with an Unmarshal method and a
// field that is a message held by value; nothing else.
func TestSupports(t *testing.T) {
	type P struct{}
	type noUnmarshal struct {
		Meta testMeta `protobuf:"bytes,1,opt,name=metadata"`
	}
	for _, c := range []struct {
		t    reflect.Type
		want bool
	}{
		{reflect.TypeFor[*testObj[P]](), true},
		{reflect.TypeFor[testObj[P]](), false},
		{reflect.TypeFor[*noUnmarshal](), false},
		{reflect.TypeFor[*testItem](), false},  // no message fields
		{reflect.TypeFor[*testExtra](), false}, // a pointer to one, not a value
		{reflect.TypeFor[*testSpec](), false},
		{reflect.TypeFor[*rawMsg](), false},
		{reflect.TypeFor[*int](), false},
	} {
		if got := Supports(c.t); got != c.want {
			t.Errorf("Supports(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}

// TestContextAndNilMemo: NewContext and FromContext carry a Memo; a nil
// Memo, and a Memo given a non-struct, just Unmarshal.
func TestContextAndNilMemo(t *testing.T) {
	type P struct{}
	m := New()
	ctx := NewContext(context.Background(), m)
	if FromContext(ctx) != m {
		t.Fatal("FromContext(NewContext(ctx, m)) is not m")
	}
	if FromContext(context.Background()) != nil || FromContext(NewContext(ctx, nil)) != nil {
		t.Fatal("FromContext of a context without a Memo is not nil")
	}
	var nilMemo *Memo
	b := testSamples[P](1, 1)[0].Marshal()
	decodeBoth[P](t, nilMemo, b, "nil memo")
	decodeBoth[P](t, nilMemo, b[:len(b)-1], "nil memo, truncated")
	var r rawMsg
	if err := m.Decode(&r, b); err != nil || !bytes.Equal(r, b) {
		t.Fatalf("Decode into a *rawMsg: %v, %x", err, []byte(r))
	}
	if h, mi := m.Stats(); h != 0 || mi != 0 {
		t.Fatal("Decode of a non-struct looked something up")
	}
}

// TestDecodeConcurrently: goroutines decoding the same objects through
// one Memo (under the race detector in CI) all get what Unmarshal gives.
func TestDecodeConcurrently(t *testing.T) {
	type P struct{}
	objs := testSamples[P](5, 4)
	inputs := make([][]byte, len(objs))
	for i, o := range objs {
		inputs[i] = o.Marshal()
	}
	m := New()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for round := range 3 {
				for k := range inputs {
					i := (k + g*7) % len(inputs)
					var got testObj[P]
					if err := m.Decode(&got, inputs[i]); err != nil {
						errs <- err
						return
					}
					if !reflect.DeepEqual(&got, objs[i]) {
						errs <- fmt.Errorf("goroutine %d, round %d, object %d:\n%+v\nwant\n%+v", g, round, i, &got, objs[i])
						return
					}
					// After the first round every part is remembered (in the
					// first, the loser of a race to remember a part keeps
					// its own, not owned).
					for _, p := range memoParts(&got) {
						if round > 0 && p.word != nil && m.Owner(p.word) == nil {
							errs <- fmt.Errorf("goroutine %d, object %d: %s not owned", g, i, p.name)
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if hits, misses := m.Stats(); hits == 0 || misses == 0 {
		t.Errorf("Stats() = %d, %d", hits, misses)
	}
}

// forgetTries makes Decode look up each field of the object type t as
// it does a new type's (the fuzz function runs one input at a time).
func forgetTries(t reflect.Type) {
	for _, f := range planOf(t).fields {
		if f != nil && f.sub != nil {
			for _, g := range f.sub.fields {
				if g != nil {
					g.tries.Store(0)
					g.hits.Store(0)
					g.skips.Store(0)
				}
			}
		}
	}
}

// FuzzDecode: for any bytes, Decode through a memo that has seen the
// seeds fails exactly when Unmarshal fails and otherwise gives what
// Unmarshal gives, the first time and again.
func FuzzDecode(f *testing.F) {
	type P struct{}
	m := New()
	for _, o := range testSamples[P](4, 2) {
		b := o.Marshal()
		f.Add(b)
		if err := m.Decode(new(testObj[P]), b); err != nil {
			f.Fatal(err)
		}
	}
	for _, c := range testCases() {
		f.Add(c.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Most inputs' parts are new: without this, after the first few
		// inputs most lookups would be left out (worthTrying).
		forgetTries(reflect.TypeFor[testObj[P]]())
		for round := range 2 {
			decodeBoth[P](t, m, b, fmt.Sprint("round ", round))
		}
	})
}
