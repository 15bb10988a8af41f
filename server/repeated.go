package server

import "encoding/json"

// A request body may repeat a top-level key ({"data":{"a":"1"},
// "data":{"b":"2"}}). kube's strict decoder reports each repeated field
// (`duplicate field "data"`: a warning, or a 400 under Strict), and what
// is decoded is what encoding/json would decode: a built-in kind is a Go
// struct, so the occurrences of an object merge (a struct or map decodes
// the next occurrence into itself) and anything else is replaced; a
// custom resource decodes into a map[string]any, where the last
// occurrence wins.

// decodeRepeated decodes a body whose top level repeats keys: each
// repeated key is reported once as kube's strict decoder reports it, and
// its occurrences are merged (typed) or the last kept.
func decodeRepeated(b []byte, typed bool) (*doc, error) {
	ms, ok := splitObject(validUTF8(b))
	if !ok {
		return decodeDoc(b) // not reached: decodeDoc parsed b
	}
	var errs strictErrors
	var keys []string
	vals := map[string]json.RawMessage{}
	for _, m := range ms {
		prev, seen := vals[m.key]
		switch {
		case !seen:
			keys = append(keys, m.key)
			vals[m.key] = m.val
			continue
		case typed:
			vals[m.key] = mergeJSON(prev, m.val)
		default:
			vals[m.key] = m.val
		}
		errs.add("duplicate field", m.key)
	}
	d, err := decodeDoc(encodeMembers(keys, vals))
	if err != nil {
		return nil, err
	}
	d.strict = append(errs, d.strict...)
	return d, nil
}

// mergeJSON is b decoded by encoding/json into what a decoded: objects
// merge member by member (recursively, a repeated member within one
// merging the same way), anything else is replaced by b. Both are valid
// JSON.
func mergeJSON(a, b json.RawMessage) json.RawMessage {
	ma, okA := splitObject(a)
	mb, okB := splitObject(b)
	if !okA || !okB {
		return b
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for _, m := range append(ma, mb...) {
		prev, seen := vals[m.key]
		if !seen {
			keys = append(keys, m.key)
			vals[m.key] = m.val
			continue
		}
		vals[m.key] = mergeJSON(prev, m.val)
	}
	return encodeMembers(keys, vals)
}
