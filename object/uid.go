package object

import "reflect"

// UID returns obj's metadata.uid, or "" when its type has no usable GetUID.
//
// Object leaves the UID out of its method set (the key is what caches are
// indexed by), but a UID is the only way to tell an object from another one
// created later under the same name. *Unstructured has GetUID() string; the
// k8s.io/api types have GetUID() returning a named string type (types.UID),
// which this package cannot name without importing apimachinery, so those
// are read by reflection. Callers use it off the hot path (relists).
func UID(obj Object) string {
	if u, ok := obj.(interface{ GetUID() string }); ok {
		return u.GetUID()
	}
	v := reflect.ValueOf(obj)
	if !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		return ""
	}
	m := v.MethodByName("GetUID")
	if !m.IsValid() {
		return ""
	}
	t := m.Type()
	if t.NumIn() != 0 || t.NumOut() != 1 || t.Out(0).Kind() != reflect.String {
		return ""
	}
	return m.Call(nil)[0].String()
}
