package storage

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/listwatch/listwatch/server/internal/jsonscan"
)

// WithResourceVersion returns a copy of value, a JSON object whose
// top-level "metadata" is an object without resourceVersion, with
// metadata.resourceVersion set to rev. It splices bytes instead of decoding,
// so its cost is one copy of the value plus a scan up to "metadata", which
// writers put near the front.
func WithResourceVersion(value []byte, rev int64) ([]byte, error) {
	at, empty, ok := metadataBodyOffset(value)
	if !ok {
		return nil, ErrInvalidValue
	}
	var num [20]byte
	rv := strconv.AppendInt(num[:0], rev, 10)
	out := make([]byte, 0, len(value)+len(rv)+21)
	out = append(out, value[:at]...)
	out = append(out, `"resourceVersion":"`...)
	out = append(out, rv...)
	out = append(out, '"')
	if !empty {
		out = append(out, ',')
	}
	return append(out, value[at:]...), nil
}

// members walks the members of the JSON object b in order: fn gets each
// one's name as written (without its quotes), whether the name has
// escapes, and the index where its value starts, and returns false to stop
// there. members reports whether fn stopped it or it walked b to the '}'
// that closes it, with only space after; false if b is not a JSON object
// as far as it read. It steps over values without validating them.
func members(b []byte, fn func(key []byte, escaped bool, val int) bool) bool {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return jsonscan.SkipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		keyStart := i
		var escaped bool
		if i, escaped = jsonscan.SkipString(b, i); i < 0 {
			return false
		}
		key := b[keyStart+1 : i-1]
		if i = jsonscan.SkipSpace(b, i); i >= len(b) || b[i] != ':' {
			return false
		}
		val := jsonscan.SkipSpace(b, i+1)
		if !fn(key, escaped, val) {
			return true
		}
		if i = jsonscan.SkipValue(b, val); i < 0 {
			return false
		}
		switch i = jsonscan.SkipSpace(b, i); {
		case i < len(b) && b[i] == ',':
			i = jsonscan.SkipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return jsonscan.SkipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// metadataBodyOffset finds the offset just after the '{' that opens the
// top-level "metadata" object, and whether that object is empty.
func metadataBodyOffset(b []byte) (at int, empty, ok bool) {
	members(b, func(key []byte, escaped bool, val int) bool {
		if escaped || string(key) != "metadata" {
			return true
		}
		if val < len(b) && b[val] == '{' {
			j := jsonscan.SkipSpace(b, val+1)
			at, empty, ok = val+1, j < len(b) && b[j] == '}', true
		}
		return false
	})
	return at, empty, ok
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
// matching a watch's selector, sent at the revision of that change). A
// value from WithResourceVersion is spliced where the version sits, at the
// front of metadata; anything else is decoded and re-encoded. The result
// may share value's bytes when the version is already rev.
func SetResourceVersion(value []byte, rev int64) ([]byte, error) {
	const marker = `"metadata":{"resourceVersion":"`
	if i := bytes.Index(value, []byte(marker)); i >= 0 && topLevel(value, i) {
		start := i + len(marker)
		if end := bytes.IndexByte(value[start:], '"'); end >= 0 {
			end += start
			want := strconv.AppendInt(nil, rev, 10)
			if bytes.Equal(value[start:end], want) {
				return value, nil
			}
			out := make([]byte, 0, len(value)+len(want))
			out = append(out, value[:start]...)
			out = append(out, want...)
			return append(out, value[end:]...), nil
		}
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

// topLevel reports whether offset i of the JSON text b lies directly in
// the outermost object, outside any string.
func topLevel(b []byte, i int) bool {
	depth, inString := 0, false
	for j := 0; j < i; j++ {
		switch c := b[j]; {
		case inString && c == '\\':
			j++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth == 1 && !inString && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
}
