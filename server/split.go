package server

import (
	"bytes"
	"encoding/json"
)

// splitObject reads the members of the JSON object b in order, as
// encoding/json's tokenizer does, without decoding or copying their
// values: each value is the sub-slice of b that holds it (capacity capped,
// so an append to it never writes into b), and keys are copied, escapes
// decoded. b must be valid JSON (json.Valid) with its invalid UTF-8
// replaced (validUTF8): the scan only follows strings and brackets, and
// keys are taken as spelled. ok is false when b is not an object (on
// other input the result means nothing, but the scan never panics).
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
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return nil, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		start := i
		var esc bool
		i, esc = skipString(b, i)
		if i < 0 {
			return nil, false
		}
		var k string
		if esc {
			_ = json.Unmarshal(b[start:i], &k)
		} else {
			k = string(b[start+1 : i-1])
		}
		if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
			return nil, false
		}
		v := skipSpace(b, i+1)
		if i = skipValue(b, v); i < 0 {
			return nil, false
		}
		ms = append(ms, member{k, b[v:i:i]})
		switch i = skipSpace(b, i); {
		case i >= len(b):
			return nil, false
		case b[i] == '}':
			return ms, true
		case b[i] != ',':
			return nil, false
		}
		i = skipSpace(b, i+1)
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
// quote), and whether it has escapes; -1 if it does not end.
func skipString(b []byte, i int) (int, bool) {
	i++
	j := bytes.IndexByte(b[i:], '"')
	if j < 0 {
		return -1, false
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
	return -1, true
}

// skipValue returns the index after the value that starts at b[i]; -1 if
// there is none or it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		i, _ = skipString(b, i)
		return i
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i, _ = skipString(b, i); i < 0 {
					return -1
				}
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
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	return j
}
