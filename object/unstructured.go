package object

import (
	"encoding/json"
	"maps"
)

// Unstructured is an object held as decoded JSON. It is what the client and
// informer use for resources that have no Go type, such as custom resources.
//
// The zero value is an empty object; accessors never panic on missing or
// mistyped fields, they return the zero value instead.
type Unstructured struct {
	Object map[string]any
}

var _ Object = (*Unstructured)(nil)

// UnmarshalJSON decodes a JSON object. Numbers are kept as json.Number so
// that integers survive a round trip unchanged.
func (u *Unstructured) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytesReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	u.Object = m
	return nil
}

// MarshalJSON encodes the object; a nil map encodes as {}.
func (u *Unstructured) MarshalJSON() ([]byte, error) {
	if u == nil || u.Object == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(u.Object)
}

// DeepCopy returns an independent copy.
func (u *Unstructured) DeepCopy() *Unstructured {
	if u == nil {
		return nil
	}
	return &Unstructured{Object: deepCopyMap(u.Object)}
}

func (u *Unstructured) GetAPIVersion() string  { return u.nestedString("apiVersion") }
func (u *Unstructured) GetKind() string        { return u.nestedString("kind") }
func (u *Unstructured) SetAPIVersion(v string) { u.setNested(v, "apiVersion") }
func (u *Unstructured) SetKind(v string)       { u.setNested(v, "kind") }

func (u *Unstructured) GetNamespace() string { return u.nestedString("metadata", "namespace") }
func (u *Unstructured) GetName() string      { return u.nestedString("metadata", "name") }
func (u *Unstructured) GetUID() string       { return u.nestedString("metadata", "uid") }
func (u *Unstructured) GetResourceVersion() string {
	return u.nestedString("metadata", "resourceVersion")
}
func (u *Unstructured) SetNamespace(v string)       { u.setNested(v, "metadata", "namespace") }
func (u *Unstructured) SetName(v string)            { u.setNested(v, "metadata", "name") }
func (u *Unstructured) SetResourceVersion(v string) { u.setNested(v, "metadata", "resourceVersion") }
func (u *Unstructured) GetLabels() map[string]string {
	return u.nestedStringMap("metadata", "labels")
}
func (u *Unstructured) GetAnnotations() map[string]string {
	return u.nestedStringMap("metadata", "annotations")
}

// SetLabels replaces the labels; nil removes them.
func (u *Unstructured) SetLabels(l map[string]string) { u.setStringMap(l, "metadata", "labels") }

// SetAnnotations replaces the annotations; nil removes them.
func (u *Unstructured) SetAnnotations(a map[string]string) {
	u.setStringMap(a, "metadata", "annotations")
}

// Nested returns the value at path, and whether it exists.
func (u *Unstructured) Nested(path ...string) (any, bool) {
	var cur any = u.Object
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// SetNested sets the value at path, creating intermediate objects.
func (u *Unstructured) SetNested(v any, path ...string) { u.setNested(v, path...) }

// RemoveNested deletes the value at path, if present.
func (u *Unstructured) RemoveNested(path ...string) {
	if len(path) == 0 {
		return
	}
	parent, ok := u.Nested(path[:len(path)-1]...)
	if m, isMap := parent.(map[string]any); ok && isMap {
		delete(m, path[len(path)-1])
	}
}

func (u *Unstructured) nestedString(path ...string) string {
	v, _ := u.Nested(path...)
	s, _ := v.(string)
	return s
}

func (u *Unstructured) nestedStringMap(path ...string) map[string]string {
	v, _ := u.Nested(path...)
	switch m := v.(type) {
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, val := range m {
			if s, ok := val.(string); ok {
				out[k] = s
			}
		}
		return out
	case map[string]string:
		return maps.Clone(m)
	}
	return nil
}

func (u *Unstructured) setStringMap(m map[string]string, path ...string) {
	if m == nil {
		u.RemoveNested(path...)
		return
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	u.setNested(out, path...)
}

func (u *Unstructured) setNested(v any, path ...string) {
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	m := u.Object
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopyValue(e)
		}
		return out
	default:
		// Strings, json.Number, bool, float64, nil: immutable.
		return t
	}
}
