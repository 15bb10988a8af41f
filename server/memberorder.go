package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// kube-apiserver encodes a built-in object with encoding/json of its Go
// type, so its members come in the order of the type's fields: kind,
// apiVersion (TypeMeta), metadata with ObjectMeta's fields in their
// order, then the kind's own (spec, status; data, binaryData…). serve
// stores a built-in object so (doc.encode), and storage splices
// resourceVersion into ObjectMeta's place (storage.WithResourceVersion),
// so reads, lists and watch events send kube's bytes as stored.

// memberOrder is the order of an object's members as kube encodes them:
// top, the JSON names of its type's fields, starting kind, apiVersion,
// metadata.
type memberOrder struct {
	top []string
}

// metaOrder is ObjectMeta's fields' JSON names in their Go order.
var metaOrder = jsonNames(reflect.TypeFor[metav1.ObjectMeta]())

type orderKey struct{ apiVersion, kind string }

// memberOrders caches kubeOrder: *memberOrder, nil for a kind no scheme
// knows.
var memberOrders sync.Map

// orderSchemes are the schemes whose kinds serve stores in kube's typed
// order: kube's built-in kinds, CRDs and APIServices.
var orderSchemes = sync.OnceValue(func() []*runtime.Scheme {
	return []*runtime.Scheme{legacyscheme.Scheme, crdScheme, aggregatorScheme}
})

// kubeOrder is the order kube's typed encoder writes an object of
// apiVersion and kind in; nil for a kind of none of its schemes (a
// custom resource), which is encoded by name, or one whose Go type has
// its own JSON encoding.
func kubeOrder(apiVersion, kind string) *memberOrder {
	k := orderKey{apiVersion, kind}
	if v, ok := memberOrders.Load(k); ok {
		return v.(*memberOrder)
	}
	var o *memberOrder
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	if kind != "" && gvk.Version != "" && gvk.Version != runtime.APIVersionInternal {
		for _, s := range orderSchemes() {
			obj, err := s.New(gvk)
			if err != nil {
				continue
			}
			typ := reflect.TypeOf(obj)
			if typ.Implements(jsonMarshalerType) || typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
				break
			}
			if names := jsonNames(typ.Elem()); len(names) >= 3 && slices.Equal(names[:3], []string{"kind", "apiVersion", "metadata"}) {
				o = &memberOrder{top: names}
			}
			break
		}
	}
	memberOrders.Store(k, o)
	return o
}

// jsonNames are the JSON names encoding/json gives typ's fields, in its
// order: an embedded struct without a name in its tag is written in its
// place (kube's types have no conflicting names).
func jsonNames(typ reflect.Type) []string {
	var names []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				names = append(names, jsonNames(ft)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// writeOrdered writes m's fields, compacted, those named in order first
// in that order, then any others by name (all by name for a nil order),
// leaving out those named in skip. (An empty name is a legal JSON key, so
// "no skip" is an empty list, never "".)
func writeOrdered(b *bytes.Buffer, m map[string]json.RawMessage, order []string, skip ...string) {
	n, seen := 0, 0
	for _, k := range order {
		v, ok := m[k]
		if !ok {
			continue
		}
		seen++
		if slices.Contains(skip, k) {
			continue
		}
		writeMember(b, n > 0, k, v)
		n++
	}
	if seen == len(m) {
		return
	}
	var others []string
	for k := range m {
		if !slices.Contains(order, k) && !slices.Contains(skip, k) {
			others = append(others, k)
		}
	}
	slices.Sort(others)
	for _, k := range others {
		writeMember(b, n > 0, k, m[k])
		n++
	}
}

// writeMember writes one member, compacted, after a comma unless first.
func writeMember(b *bytes.Buffer, comma bool, k string, v json.RawMessage) {
	if comma {
		b.WriteByte(',')
	}
	writeJSONString(b, k)
	b.WriteByte(':')
	if isCompact(v) {
		b.Write(v)
	} else if err := json.Compact(b, v); err != nil {
		b.WriteString("null")
	}
}
