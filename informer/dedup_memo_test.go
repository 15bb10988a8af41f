package informer

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/internal/protomemo"
	"github.com/listwatch/listwatch/object"
)

// memoObj is an object shaped as a k8s.io/api one for the memo: metadata
// and spec held by value, each with fields that are slices of messages
// and maps, and a protobuf pair written the way gogo generates it.
type memoObj struct {
	Meta memoMeta `protobuf:"bytes,1,opt,name=metadata"`
	Spec memoSpec `protobuf:"bytes,2,opt,name=spec"`
}

type memoMeta struct {
	Name            string            `protobuf:"bytes,1,opt,name=name"`
	Namespace       string            `protobuf:"bytes,2,opt,name=namespace"`
	UID             string            `protobuf:"bytes,3,opt,name=uid"`
	ResourceVersion string            `protobuf:"bytes,4,opt,name=resourceVersion"`
	Labels          map[string]string `protobuf:"bytes,5,rep,name=labels"`
	Owners          []memoItem        `protobuf:"bytes,6,rep,name=owners"`
}

type memoSpec struct {
	Node  string     `protobuf:"bytes,1,opt,name=node"`
	Items []memoItem `protobuf:"bytes,2,rep,name=items"`
}

type memoItem struct {
	Name  string   `protobuf:"bytes,1,opt,name=name"`
	Image string   `protobuf:"bytes,2,opt,name=image"`
	Args  []string `protobuf:"bytes,3,rep,name=args"`
}

func (o *memoObj) GetName() string                   { return o.Meta.Name }
func (o *memoObj) GetNamespace() string              { return o.Meta.Namespace }
func (o *memoObj) GetResourceVersion() string        { return o.Meta.ResourceVersion }
func (o *memoObj) SetResourceVersion(rv string)      { o.Meta.ResourceVersion = rv }
func (o *memoObj) GetLabels() map[string]string      { return o.Meta.Labels }
func (o *memoObj) GetAnnotations() map[string]string { return nil }

var _ object.Object = (*memoObj)(nil)

func (o *memoObj) Marshal() []byte {
	var meta, spec []byte
	meta = appendStr(meta, 1, o.Meta.Name)
	meta = appendStr(meta, 2, o.Meta.Namespace)
	meta = appendStr(meta, 3, o.Meta.UID)
	meta = appendStr(meta, 4, o.Meta.ResourceVersion)
	for _, k := range slices.Sorted(maps.Keys(o.Meta.Labels)) {
		var e []byte
		e = appendStr(e, 1, k)
		e = appendStr(e, 2, o.Meta.Labels[k])
		meta = protowire.AppendTag(meta, 5, protowire.BytesType)
		meta = protowire.AppendBytes(meta, e)
	}
	meta = appendItems(meta, 6, o.Meta.Owners)
	spec = appendStr(spec, 1, o.Spec.Node)
	spec = appendItems(spec, 2, o.Spec.Items)
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendBytes(out, meta)
	out = protowire.AppendTag(out, 2, protowire.BytesType)
	return protowire.AppendBytes(out, spec)
}

func appendItems(out []byte, n protowire.Number, items []memoItem) []byte {
	for _, it := range items {
		var b []byte
		b = appendStr(b, 1, it.Name)
		b = appendStr(b, 2, it.Image)
		for _, a := range it.Args {
			b = protowire.AppendTag(b, 3, protowire.BytesType)
			b = protowire.AppendString(b, a)
		}
		out = protowire.AppendTag(out, n, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out
}

func (it *memoItem) Unmarshal(b []byte) error {
	return eachRecord(b, func(n protowire.Number, v []byte) error {
		switch n {
		case 1:
			it.Name = string(v)
		case 2:
			it.Image = string(v)
		case 3:
			it.Args = append(it.Args, string(v))
		}
		return nil
	})
}

func appendStr(b []byte, n protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendString(b, s)
}

var errMemoWire = errors.New("bad wire")

// eachRecord calls fn with every bytes-typed record of b, as generated
// code reads them (merging into what is there).
func eachRecord(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return errMemoWire
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return errMemoWire
		}
		if err := fn(num, v); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

func (o *memoObj) Unmarshal(b []byte) error {
	return eachRecord(b, func(n protowire.Number, v []byte) error {
		switch n {
		case 1:
			return o.Meta.Unmarshal(v)
		case 2:
			return o.Spec.Unmarshal(v)
		}
		return nil
	})
}

func (m *memoMeta) Unmarshal(b []byte) error {
	return eachRecord(b, func(n protowire.Number, v []byte) error {
		switch n {
		case 1:
			m.Name = string(v)
		case 2:
			m.Namespace = string(v)
		case 3:
			m.UID = string(v)
		case 4:
			m.ResourceVersion = string(v)
		case 5:
			var k, val string
			if err := eachRecord(v, func(n protowire.Number, v []byte) error {
				if n == 1 {
					k = string(v)
				} else {
					val = string(v)
				}
				return nil
			}); err != nil {
				return err
			}
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels[k] = val
		case 6:
			var it memoItem
			if err := it.Unmarshal(v); err != nil {
				return err
			}
			m.Owners = append(m.Owners, it)
		}
		return nil
	})
}

func (s *memoSpec) Unmarshal(b []byte) error {
	return eachRecord(b, func(n protowire.Number, v []byte) error {
		switch n {
		case 1:
			s.Node = string(v)
		case 2:
			var it memoItem
			if err := it.Unmarshal(v); err != nil {
				return err
			}
			s.Items = append(s.Items, it)
		}
		return nil
	})
}

// TestDedupWalksMemoPartsOnce: parts a memo handed to several objects
// are walked with the first object only; the next ones get what that
// walk made of them, without a walk (so nothing writes into a part
// other objects hold), and end up sharing with an equal part decoded
// without the memo.
func TestDedupWalksMemoPartsOnce(t *testing.T) {
	obj := func(name, node string) *memoObj {
		return &memoObj{
			Meta: memoMeta{Name: name, Namespace: "ns", UID: "u-" + name, ResourceVersion: "1", Labels: map[string]string{"app": "web", "tier": "front"}},
			Spec: memoSpec{Node: node, Items: []memoItem{{Name: "app", Image: "img:1", Args: []string{"-v", "--x"}}, {Name: "proxy", Image: "envoy"}}},
		}
	}
	// One object decoded without the memo first: its parts become the
	// tables' canonical ones.
	plain := obj("plain", "n0")
	var first memoObj
	if err := first.Unmarshal(plain.Marshal()); err != nil {
		t.Fatal(err)
	}
	memo := protomemo.New()
	d := newDeduper(DefaultDedupEntries)
	d.memo = memo
	dedupObject(d, &first)

	var objs []*memoObj
	for i, node := range []string{"n1", "n2", "n3"} {
		var o memoObj
		if err := memo.Decode(&o, obj(string(rune('a'+i)), node).Marshal()); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&o, func() *memoObj { x := obj(string(rune('a'+i)), node); return x }()) {
			t.Fatalf("decoded %+v", o)
		}
		objs = append(objs, &o)
	}
	if hits, _ := memo.Stats(); hits != 4 {
		t.Fatalf("memo hits %d, want 4 (items and labels of the second and third objects)", hits)
	}
	items := unsafe.Pointer(unsafe.SliceData(objs[1].Spec.Items))
	if items != unsafe.Pointer(unsafe.SliceData(objs[2].Spec.Items)) || memo.Owner(items) == nil {
		t.Fatal("the memo did not hand out one items slice")
	}

	visited := make([]int, len(objs))
	for i, o := range objs {
		dedupObject(d, o)
		visited[i] = dedupBudget - d.budget
	}
	if o := memo.Owner(items); o == nil {
		t.Fatal("owner lost")
	} else if canon, ok := o.Walked(); !ok || canon != unsafe.Pointer(unsafe.SliceData(first.Spec.Items)) {
		t.Fatalf("the memo's items were not walked once and shared with the first object's (walked %v)", ok)
	}
	// The first object with memo parts walks them; the next ones do not.
	if visited[1] >= visited[0] || visited[2] != visited[1] {
		t.Fatalf("values visited per object %v: the memo's parts were walked again", visited)
	}
	for _, o := range objs {
		if unsafe.SliceData(o.Spec.Items) != unsafe.SliceData(first.Spec.Items) ||
			reflect.ValueOf(o.Meta.Labels).UnsafePointer() != reflect.ValueOf(first.Meta.Labels).UnsafePointer() {
			t.Fatalf("object %s does not share its items and labels with the first", o.Meta.Name)
		}
		if cap(o.Spec.Items) != len(o.Spec.Items) {
			t.Fatal("a shared slice kept spare capacity")
		}
	}
}

// TestDedupMarksMemoPartsOutOfBudget: an object whose metadata uses up
// the walk's budget still has its spec's memo parts marked (walked as
// they are) before it is stored, so that the next object with those
// parts does not walk them, writing into what the first one holds.
func TestDedupMarksMemoPartsOutOfBudget(t *testing.T) {
	items := []memoItem{{Name: "app", Image: "img:1", Args: []string{"-v"}}}
	big := &memoObj{Meta: memoMeta{Name: "big", Namespace: "ns", UID: "u1", ResourceVersion: "1"}, Spec: memoSpec{Node: "n1", Items: items}}
	for i := range dedupBudget / 3 {
		big.Meta.Owners = append(big.Meta.Owners, memoItem{Name: strconv.Itoa(i)})
	}
	small := &memoObj{Meta: memoMeta{Name: "small", Namespace: "ns", UID: "u2", ResourceVersion: "1"}, Spec: memoSpec{Node: "n2", Items: items}}
	memo := protomemo.New()
	var a, b memoObj
	if err := memo.Decode(&a, big.Marshal()); err != nil {
		t.Fatal(err)
	}
	if err := memo.Decode(&b, small.Marshal()); err != nil {
		t.Fatal(err)
	}
	part := unsafe.Pointer(unsafe.SliceData(a.Spec.Items))
	if part != unsafe.Pointer(unsafe.SliceData(b.Spec.Items)) || memo.Owner(part) == nil {
		t.Fatal("the memo did not hand both objects one items slice")
	}
	d := newDeduper(DefaultDedupEntries)
	d.memo = memo
	dedupObject(d, &a)
	if d.budget > 0 {
		t.Fatalf("the big object left %d of the budget", d.budget)
	}
	if _, ok := memo.Owner(part).Walked(); !ok {
		t.Fatal("out of budget, the spec's memo part was left unmarked")
	}
}
