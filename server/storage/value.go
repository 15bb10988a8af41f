package storage

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/listwatch/listwatch/server/internal/jsonscan"
)

// WithResourceVersion returns a copy of value, a JSON object whose
// top-level "metadata" is an object without resourceVersion, with
// metadata.resourceVersion set to rev where kube-apiserver's encoders
// write it (rvOffset): after name, generateName, namespace, selfLink and
// uid in a built-in object (kube's typed order, which serve stores with
// "kind" first), else among metadata's members by name (encoding/json of
// a map: a custom resource). It splices bytes instead of decoding, so its
// cost is one copy of the value plus a scan of metadata's members up to
// that place; writers put metadata near the front.
func WithResourceVersion(value []byte, rev int64) ([]byte, error) {
	at, sep, ok := rvOffset(value)
	if !ok {
		return nil, ErrInvalidValue
	}
	var num [20]byte
	rv := strconv.AppendInt(num[:0], rev, 10)
	out := make([]byte, 0, len(value)+len(rv)+21)
	out = append(out, value[:at]...)
	if sep == sepBefore {
		out = append(out, ',')
	}
	out = append(out, `"resourceVersion":"`...)
	out = append(out, rv...)
	out = append(out, '"')
	if sep == sepAfter {
		out = append(out, ',')
	}
	return append(out, value[at:]...), nil
}

// Where rvOffset's place is, between metadata's members: the comma the
// resourceVersion member takes before it (after a member) or after it
// (before one), or none (metadata is empty).
const (
	sepNone = iota
	sepBefore
	sepAfter
)

// typedPrefix are the members of ObjectMeta before resourceVersion in its
// Go order, which kube's typed JSON encoder follows.
var typedPrefix = [...]string{"name", "generateName", "namespace", "selfLink", "uid"}

// rvOffset is where WithResourceVersion puts metadata.resourceVersion in
// b. A value whose first member is "kind" is a built-in object in kube's
// typed order (kind, apiVersion, metadata with ObjectMeta's fields in
// their Go order): the version goes after the last of typedPrefix before
// any other member. Anything else (a custom resource, stored as
// encoding/json of its map, or a built-in object stored by an earlier
// serve with metadata's members by name) has it before the first member
// whose name sorts after "resourceVersion".
func rvOffset(b []byte) (at, sep int, ok bool) {
	meta, typed := metadataStart(b)
	if meta < 0 {
		return 0, 0, false
	}
	at, sep = meta+1, sepNone
	bad := false
	ok = objectMembers(b, meta, func(key []byte, escaped bool, val int) bool {
		if typed {
			if escaped || !slices.Contains(typedPrefix[:], string(key)) {
				return false
			}
		} else if string(key) > "resourceVersion" {
			return false
		}
		end := jsonscan.SkipValue(b, val)
		if end < 0 {
			bad = true
			return false
		}
		at, sep = end, sepBefore
		return true
	}) >= 0 && !bad
	if ok && sep == sepNone {
		// Before the first member, if there is one.
		if j := jsonscan.SkipSpace(b, meta+1); j < len(b) && b[j] != '}' {
			sep = sepAfter
		}
	}
	return at, sep, ok
}

// metadataStart is the index of the '{' that opens b's first member
// named "metadata" (written so, without escapes), -1 if there is none or
// it is not an object; and whether b's first member is "kind", as kube's
// typed encoder and serve's store write a built-in object.
func metadataStart(b []byte) (meta int, kindFirst bool) {
	meta = -1
	first := true
	members(b, func(key []byte, escaped bool, val int) bool {
		if first {
			kindFirst, first = !escaped && string(key) == "kind", false
		}
		if escaped || string(key) != "metadata" {
			return true
		}
		if val < len(b) && b[val] == '{' {
			meta = val
		}
		return false
	})
	return meta, kindFirst
}

// members walks the members of the JSON object b in order: fn gets each
// one's name as written (without its quotes), whether the name has
// escapes, and the index where its value starts, and returns false to stop
// there. members reports whether fn stopped it or it walked b to the '}'
// that closes it, with only space after; false if b is not a JSON object
// as far as it read. It steps over values without validating them.
func members(b []byte, fn func(key []byte, escaped bool, val int) bool) bool {
	i := jsonscan.SkipSpace(b, 0)
	end := objectMembers(b, i, fn)
	return end == len(b) || end >= 0 && jsonscan.SkipSpace(b, end) == len(b)
}

// objectMembers walks the members of the JSON object that starts at
// b[i] as members does. It returns the index after the object's '}', or
// len(b) if fn stopped it, or -1 if b[i:] is not a JSON object as far as
// it read.
func objectMembers(b []byte, i int, fn func(key []byte, escaped bool, val int) bool) int {
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		keyStart := i
		var escaped bool
		if i, escaped = jsonscan.SkipString(b, i); i < 0 {
			return -1
		}
		key := b[keyStart+1 : i-1]
		if i = jsonscan.SkipSpace(b, i); i >= len(b) || b[i] != ':' {
			return -1
		}
		val := jsonscan.SkipSpace(b, i+1)
		if !fn(key, escaped, val) {
			return len(b)
		}
		if i = jsonscan.SkipValue(b, val); i < 0 {
			return -1
		}
		switch i = jsonscan.SkipSpace(b, i); {
		case i < len(b) && b[i] == ',':
			i = jsonscan.SkipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return i + 1
		default:
			return -1
		}
	}
}

// metadataValue is the top-level "metadata" object of b, a JSON object,
// where b has exactly one member whose name matches "metadata" as
// encoding/json matches names (without regard to case), no member name
// has escapes, and that one is written "metadata" and is an object. It
// only steps over the other members: b is valid JSON (the server's own
// stored values), or the answer may be wrong, never a panic.
func metadataValue(b []byte) (meta []byte, ok bool) {
	exact := true
	walked := members(b, func(key []byte, escaped bool, val int) bool {
		if escaped {
			exact = false
			return false
		}
		if !bytes.EqualFold(key, []byte("metadata")) {
			return true
		}
		end := jsonscan.SkipValue(b, val)
		if meta != nil || string(key) != "metadata" || end < 0 || b[val] != '{' {
			exact = false
			return false
		}
		meta = b[val:end]
		return true
	})
	return meta, walked && exact && meta != nil
}

// SetResourceVersion returns value with metadata.resourceVersion set to
// rev, replacing the one it has: it re-stamps an object this package
// already returned (such as the last state of an object that stopped
// matching a watch's selector, sent at the revision of that change). The
// version is spliced where it sits among metadata's members (where
// WithResourceVersion put it, or first, where an earlier serve put it),
// or where WithResourceVersion puts it if metadata has none; anything
// else (a version that is no plain string, a member name with escapes)
// is decoded and re-encoded. The result may share value's bytes when the
// version is already rev.
func SetResourceVersion(value []byte, rev int64) ([]byte, error) {
	if start, end, found, ok := rvValue(value); ok {
		if !found {
			return WithResourceVersion(value, rev)
		}
		want := strconv.AppendInt(nil, rev, 10)
		if bytes.Equal(value[start:end], want) {
			return value, nil
		}
		out := make([]byte, 0, len(value)+len(want))
		out = append(out, value[:start]...)
		out = append(out, want...)
		return append(out, value[end:]...), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, ErrInvalidValue
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(obj["metadata"], &meta); err != nil || meta == nil {
		return nil, ErrInvalidValue
	}
	meta["resourceVersion"] = json.RawMessage(strconv.Quote(strconv.FormatInt(rev, 10)))
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, ErrInvalidValue
	}
	obj["metadata"] = m
	return json.Marshal(obj)
}

// rvValue finds metadata.resourceVersion in b, a JSON object: the
// digits between its quotes are b[start:end]. found is false if
// metadata has no such member. ok is false unless b's first member named
// "metadata" is an object whose member names (up to the version) have no
// escapes and whose version, if any, is a string without escapes: what
// this package writes.
func rvValue(b []byte) (start, end int, found, ok bool) {
	meta, _ := metadataStart(b)
	if meta < 0 {
		return 0, 0, false, false
	}
	clean := true
	walked := objectMembers(b, meta, func(key []byte, escaped bool, val int) bool {
		if escaped {
			clean = false
			return false
		}
		if string(key) != "resourceVersion" {
			return true
		}
		found = true
		if val >= len(b) || b[val] != '"' {
			clean = false
			return false
		}
		e, esc := jsonscan.SkipString(b, val)
		if e < 0 || esc {
			clean = false
			return false
		}
		start, end = val+1, e-1
		return false
	})
	if walked < 0 || !clean {
		return 0, 0, false, false
	}
	return start, end, found, true
}
