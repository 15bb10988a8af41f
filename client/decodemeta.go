package client

import (
	"encoding/json"
	"strings"

	"github.com/listwatch/listwatch/object"
)

// encoding/json matches object keys to struct fields case-insensitively
// (Unicode simple folding: "resourceversion", "NAME" and "reſourceVersion"
// all reach ResourceVersion or Name), and the last match wins. Kubernetes'
// own decoders are case-sensitive, so a key spelled that way is no field at
// all to client-go. decodeObject and decodeList give a typed object the
// metadata client-go would see: they decode as before and, when the raw
// JSON has a key that folds to, but is not exactly, one of the fields named
// below, they decode again without those keys. Only those fields are
// checked: the ones informers, listers and the work queue rely on.

// keySpec names the exact keys of a JSON object that decoding relies on,
// with the specs of the objects (obj) or arrays of objects (arr) under them.
type keySpec map[string]keyChild

type keyChild struct {
	obj, arr keySpec
}

var (
	ownerReferenceKeys = keySpec{"apiVersion": {}, "kind": {}, "name": {}, "uid": {},
		"controller": {}, "blockOwnerDeletion": {}}
	objectMetaKeys = keySpec{"name": {}, "generateName": {}, "namespace": {}, "selfLink": {},
		"uid": {}, "resourceVersion": {}, "generation": {}, "creationTimestamp": {},
		"deletionTimestamp": {}, "deletionGracePeriodSeconds": {}, "labels": {},
		"annotations": {}, "ownerReferences": {arr: ownerReferenceKeys}, "finalizers": {},
		"managedFields": {}}
	objectKeys   = keySpec{"apiVersion": {}, "kind": {}, "metadata": {obj: objectMetaKeys}}
	listMetaKeys = keySpec{"selfLink": {}, "resourceVersion": {}, "continue": {}, "remainingItemCount": {}}
	listKeys     = keySpec{"apiVersion": {}, "kind": {}, "metadata": {obj: listMetaKeys},
		"items": {arr: objectKeys}}
)

// decodeObject decodes data into *out; see above.
func decodeObject[T object.Object](data []byte, out *T) error {
	return decodeChecked[T](data, out, objectKeys)
}

// decodeList decodes a list of T into *out; see above.
func decodeList[T object.Object, L any](data []byte, out *L) error {
	return decodeChecked[T](data, out, listKeys)
}

func decodeChecked[T object.Object, V any](data []byte, out *V, spec keySpec) error {
	if err := json.Unmarshal(data, out); err != nil {
		return err
	}
	var zero T
	if _, ok := any(zero).(*object.Unstructured); ok {
		return nil // a map: keys are exact already
	}
	clean, changed := stripFolded(data, spec)
	if !changed {
		return nil
	}
	var fresh V
	if err := json.Unmarshal(clean, &fresh); err != nil {
		return err
	}
	*out = fresh
	return nil
}

// stripFolded returns the JSON object data without the keys that fold to
// one of spec's but are not spelled exactly so, at every level spec names.
// It returns data itself and false when there is none. data must be valid
// JSON (it was just decoded).
func stripFolded(data []byte, spec keySpec) ([]byte, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return data, false
	}
	var out []byte   // built only once something changes
	kept := false    // a member is in out (or before prevEnd)
	prevEnd := i + 1 // after the previous member's value, or after '{'
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] != '}' {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		keyStart := i
		keyEnd := skipString(data, i)
		key := unquoteKey(data[keyStart:keyEnd])
		i = skipSpace(data, keyEnd)
		valStart := skipSpace(data, i+1) // after ':'
		valEnd := skipValue(data, valStart)
		i = skipSpace(data, valEnd)

		child, exact := spec[key]
		drop := !exact && folds(key, spec)
		var newVal []byte
		if exact && (child.obj != nil || child.arr != nil) {
			if v, changed := stripChild(data[valStart:valEnd], child); changed {
				newVal = v
			}
		}
		if out == nil && (drop || newVal != nil) {
			out = make([]byte, 0, len(data))
			out = append(out, data[:prevEnd]...)
		}
		switch {
		case drop:
		case out == nil:
			kept = true
		default:
			if kept {
				out = append(out, ',')
			}
			kept = true
			out = append(out, data[keyStart:valStart]...)
			if newVal != nil {
				out = append(out, newVal...)
			} else {
				out = append(out, data[valStart:valEnd]...)
			}
		}
		prevEnd = valEnd
	}
	if out == nil {
		return data, false
	}
	return append(out, '}'), true
}

// stripChild applies child's spec to a value: an object, or each object
// of an array.
func stripChild(v []byte, child keyChild) ([]byte, bool) {
	if child.obj != nil {
		return stripFolded(v, child.obj)
	}
	if len(v) == 0 || v[0] != '[' {
		return v, false
	}
	var elems []json.RawMessage
	if json.Unmarshal(v, &elems) != nil {
		return v, false
	}
	changed := false
	for i, e := range elems {
		if s, c := stripFolded(e, child.arr); c {
			elems[i], changed = s, true
		}
	}
	if !changed {
		return v, false
	}
	out, _ := json.Marshal(elems)
	return out, true
}

// folds reports whether key matches one of spec's keys as encoding/json
// matches names (strings.EqualFold is the same folding).
func folds(key string, spec keySpec) bool {
	for k := range spec {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

func unquoteKey(q []byte) string {
	for _, c := range q {
		if c == '\\' {
			var s string
			_ = json.Unmarshal(q, &s)
			return s
		}
	}
	if len(q) < 2 {
		return ""
	}
	return string(q[1 : len(q)-1])
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
		i++
	}
	return i
}
