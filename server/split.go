package server

import (
	"bytes"
	"encoding/json"
)

// splitObject reads the members of the JSON object b in order, as
// objectMembers does, without decoding or copying their values: each value
// is the sub-slice of b that holds it (capacity capped, so an append to it
// never writes into b), and keys are copied, escapes decoded. b must be
// valid JSON (json.Valid): the scan only follows strings and brackets. ok
// is false when b is not an object.
//
// Decoding a body or a stored object into map[string]json.RawMessage with
// encoding/json validates it and then walks it again, copying every value;
// in a CPU profile of serve under creates that was most of decodeDoc's
// cost. json.Valid and this scan do the same in about half the time.
func splitObject(b []byte) (ms []member, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return nil, true
	}
	for {
		start := i
		var esc bool
		i, esc = skipString(b, i)
		key := b[start+1 : i-1]
		var k string
		if esc {
			_ = json.Unmarshal(b[start:i], &k)
		} else {
			k = string(key)
		}
		i = skipSpace(b, skipSpace(b, i)+1) // past ':'
		v := i
		i = skipValue(b, i)
		ms = append(ms, member{k, b[v:i:i]})
		i = skipSpace(b, i)
		if b[i] == '}' {
			return ms, true
		}
		i = skipSpace(b, i+1) // past ','
	}
}

// splitDoc splits a document: ok is false unless b is valid JSON and an
// object (the caller then decodes it with encoding/json for its error).
func splitDoc(b []byte) ([]member, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	return splitObject(b)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string that starts at b[i] (a
// quote), and whether it has escapes.
func skipString(b []byte, i int) (int, bool) {
	i++
	j := bytes.IndexByte(b[i:], '"')
	if j < 0 {
		return len(b), false
	}
	if bytes.IndexByte(b[i:i+j], '\\') < 0 {
		return i + j + 1, false
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte
		case '"':
			return i + 1, true
		}
	}
	return i, true
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		i, _ = skipString(b, i)
		return i
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i, _ = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
