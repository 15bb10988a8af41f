package client

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/listwatch/listwatch/object"
)

// encoding/json matches object keys to struct fields case-insensitively
// (Unicode simple folding: "resourceversion", "NAME" and "reſourceVersion"
// all reach ResourceVersion or Name), and the last match wins. Kubernetes'
// own decoders are case-sensitive, so a key spelled that way is no field at
// all to client-go. decodeObject and decodeList give a typed object the
// metadata client-go would see: when the raw JSON has a key that folds to,
// but is not exactly, one of the fields named below, they decode it without
// those keys (a scan that allocates nothing when there are none). Only
// those fields are checked: the ones informers, listers and the work queue
// rely on.

// keySpec names the exact keys of a JSON object that decoding relies on,
// with the specs of the objects (obj) or arrays of objects (arr) under them.
type keySpec struct {
	exact map[string]keyChild
	lower map[string]bool // the keys lower-cased
}

type keyChild struct {
	obj, arr *keySpec
}

func newKeySpec(exact map[string]keyChild) *keySpec {
	s := &keySpec{exact: exact, lower: make(map[string]bool, len(exact))}
	for k := range exact {
		s.lower[strings.ToLower(k)] = true
	}
	return s
}

var (
	ownerReferenceKeys = newKeySpec(map[string]keyChild{"apiVersion": {}, "kind": {}, "name": {}, "uid": {},
		"controller": {}, "blockOwnerDeletion": {}})
	objectMetaKeys = newKeySpec(map[string]keyChild{"name": {}, "generateName": {}, "namespace": {}, "selfLink": {},
		"uid": {}, "resourceVersion": {}, "generation": {}, "creationTimestamp": {},
		"deletionTimestamp": {}, "deletionGracePeriodSeconds": {}, "labels": {},
		"annotations": {}, "ownerReferences": {arr: ownerReferenceKeys}, "finalizers": {},
		"managedFields": {}})
	objectKeys   = newKeySpec(map[string]keyChild{"apiVersion": {}, "kind": {}, "metadata": {obj: objectMetaKeys}})
	listMetaKeys = newKeySpec(map[string]keyChild{"selfLink": {}, "resourceVersion": {}, "continue": {}, "remainingItemCount": {}})
	listKeys     = newKeySpec(map[string]keyChild{"apiVersion": {}, "kind": {}, "metadata": {obj: listMetaKeys},
		"items": {arr: objectKeys}})
)

// readValue reads a response body and returns its first JSON value, as a
// json.Decoder would decode it, without the decoder's copy of it.
func readValue(r io.Reader) ([]byte, error) {
	all, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	start := skipSpace(all, 0)
	if start == len(all) {
		return nil, io.EOF
	}
	return all[start:skipValue(all, start)], nil
}

// decodeObject decodes data into *out; see above.
func decodeObject[T object.Object](data []byte, out *T) error {
	return decodeChecked[T](data, out, objectKeys)
}

// decodeValid decodes data, one JSON value that a decoder has read whole
// (so known to be valid), into *out, as decodeObject does. An
// Unstructured decodes itself without json.Unmarshal's first pass, which
// only checks that data is valid: a third of decoding a large list of
// them.
func decodeValid[T object.Object](data []byte, out *T) error {
	if p, ok := any(out).(**object.Unstructured); ok && !isNull(data) {
		u := new(object.Unstructured)
		if err := u.UnmarshalJSON(data); err != nil {
			return err
		}
		*p = u
		return nil
	}
	return decodeObject(data, out)
}

func isNull(data []byte) bool { return bytes.Equal(bytes.TrimSpace(data), []byte("null")) }

// decodeList decodes a list of T into *out; see above.
func decodeList[T object.Object, L any](data []byte, out *L) error {
	return decodeChecked[T](data, out, listKeys)
}

func decodeChecked[T object.Object, V any](data []byte, out *V, spec *keySpec) error {
	var zero T
	if _, ok := any(zero).(*object.Unstructured); !ok { // a map's keys are exact already
		// Before decoding: a variant's value must not even be looked at,
		// or a mistyped one ("Metadata":5) would fail the whole object.
		data, _ = stripFolded(data, spec)
	}
	return json.Unmarshal(data, out)
}

// stripFolded returns the JSON object data without the keys that fold to
// one of spec's but are not spelled exactly so, at every level spec names.
// It returns data itself and false when there is none, or when data turns
// out not to be JSON (callers decode it first, so it is).
func stripFolded(data []byte, spec *keySpec) ([]byte, bool) {
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
		if i >= len(data) || data[i] != '"' {
			return data, false // not JSON after all: leave it to the decoder
		}
		keyEnd := skipString(data, i)
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return data, false
		}
		valStart := skipSpace(data, i+1)
		if valStart >= len(data) {
			return data, false
		}
		valEnd := skipValue(data, valStart)
		i = skipSpace(data, valEnd)

		child, exact, drop := lookupKey(data[keyStart:keyEnd], spec)
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
	var out []byte // built only once an element changes
	prevEnd := 1   // after the previous element, or after '['
	i := skipSpace(v, 1)
	for i < len(v) && v[i] != ']' {
		if v[i] == ',' {
			i = skipSpace(v, i+1)
		}
		start := i
		end := skipValue(v, i)
		if end <= start {
			return v, false // not JSON after all
		}
		i = skipSpace(v, end)
		s, changed := stripFolded(v[start:end], child.arr)
		if changed && out == nil {
			out = make([]byte, 0, len(v))
			out = append(out, v[:start]...)
		} else if out != nil {
			out = append(out, v[prevEnd:start]...)
		}
		if out != nil {
			out = append(out, s...)
		}
		prevEnd = end
	}
	if out == nil {
		return v, false
	}
	return append(out, v[prevEnd:]...), true
}

// lookupKey looks the quoted key q up in spec: its child and whether it is
// one of spec's keys exactly, or else whether encoding/json would still
// match it to one of them (fold). It allocates nothing for the usual keys:
// short, ASCII, unescaped.
func lookupKey(q []byte, spec *keySpec) (child keyChild, exact, fold bool) {
	if len(q) < 2 {
		return keyChild{}, false, false
	}
	k := q[1 : len(q)-1]
	var buf [64]byte
	simple := len(k) <= len(buf)
	for _, c := range k {
		if c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if !simple {
		key := unquoteKey(q)
		child, exact = spec.exact[key]
		return child, exact, !exact && folds(key, spec)
	}
	if child, exact = spec.exact[string(k)]; exact {
		return child, true, false
	}
	// ASCII keys fold only to ASCII: compare lower-cased.
	lower := buf[:len(k)]
	for i, c := range k {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return keyChild{}, false, spec.lower[string(lower)]
}

// folds reports whether key matches one of spec's keys as encoding/json
// matches names (strings.EqualFold is the same folding).
func folds(key string, spec *keySpec) bool {
	for k := range spec.exact {
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
