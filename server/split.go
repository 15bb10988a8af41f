package server

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/listwatch/listwatch/server/internal/jsonscan"
)

// splitObject reads the members of the JSON object b in order, as
// encoding/json's tokenizer does, without decoding or copying their
// values: each value is the sub-slice of b that holds it (capacity capped,
// so an append to it never writes into b), and keys are copied, decoded
// as eachMember gives them. b must be valid JSON (json.Valid): the scan
// only follows strings and brackets. ok is false when b is not an object (on
// other input the result means nothing, but the scan never panics).
//
// Decoding a body or a stored object into map[string]json.RawMessage with
// encoding/json validates it and then walks it again, copying every value;
// in a CPU profile of serve under creates that was most of decodeDoc's
// cost. json.Valid and this scan do the same in about half the time.
func splitObject(b []byte) (ms []member, ok bool) {
	if !eachMember(b, func(key, val []byte) bool {
		ms = append(ms, member{string(key), val[:len(val):len(val)]})
		return true
	}) {
		return nil, false
	}
	return ms, true
}

// eachMember calls fn with each member of the JSON object b (valid JSON,
// as for splitObject), in order, until fn returns false: its key with
// escapes decoded and invalid UTF-8 replaced, as encoding/json decodes
// it, and its value as the sub-slice of b that holds it. It reports
// whether b is an object and fn never returned false.
func eachMember(b []byte, fn func(key, val []byte) bool) bool {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = jsonscan.SkipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		start := i
		var esc bool
		if i, esc = jsonscan.SkipString(b, i); i < 0 {
			return false
		}
		key := b[start+1 : i-1]
		if esc || !utf8.Valid(key) {
			var k string
			if json.Unmarshal(b[start:i], &k) != nil {
				return false
			}
			key = []byte(k)
		}
		if i = jsonscan.SkipSpace(b, i); i >= len(b) || b[i] != ':' {
			return false
		}
		v := jsonscan.SkipSpace(b, i+1)
		if i = jsonscan.SkipValue(b, v); i < 0 {
			return false
		}
		if !fn(key, b[v:i]) {
			return false
		}
		switch i = jsonscan.SkipSpace(b, i); {
		case i >= len(b):
			return false
		case b[i] == '}':
			return true
		case b[i] != ',':
			return false
		}
		i = jsonscan.SkipSpace(b, i+1)
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
