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
	keys, groups := groupMembers(ms, &errs, "")
	vals := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		if g := groups[k]; typed {
			vals[k] = mergeAll(g)
		} else {
			vals[k] = g[len(g)-1]
		}
	}
	d, err := decodeDoc(encodeMembers(keys, vals))
	if err != nil {
		return nil, err
	}
	d.strict = append(errs, d.strict...)
	return d, nil
}

// groupMembers gathers the values of each key of ms, keys in the order
// first met; with errs, each repeated key is reported (as prefix+key) when
// met again.
func groupMembers(ms []member, errs *strictErrors, prefix string) (keys []string, groups map[string][]json.RawMessage) {
	groups = make(map[string][]json.RawMessage, len(ms))
	for _, m := range ms {
		g, seen := groups[m.key]
		if !seen {
			keys = append(keys, m.key)
		} else if errs != nil {
			errs.add("duplicate field", prefix+m.key)
		}
		groups[m.key] = append(g, m.val)
	}
	return keys, groups
}

// mergeAll is what encoding/json leaves when it decodes the valid JSON
// values vs, in order, into one Go value: an object merges into what is
// there member by member (recursively; a member repeated within one
// object merges the same way), anything else replaces it. So only the
// objects after the last value that is not one count, and each key's
// values across them are merged in turn. Every byte of vs is split once
// per level, however many times a key is repeated.
func mergeAll(vs []json.RawMessage) json.RawMessage {
	if len(vs) == 1 {
		return vs[0]
	}
	var all []member
	objects := 0 // since the last value that is not an object
	for _, v := range vs {
		ms, ok := splitObject(v)
		if !ok {
			all, objects = all[:0], 0 // v replaces everything before it
			continue
		}
		all = append(all, ms...)
		objects++
	}
	if objects <= 1 {
		return vs[len(vs)-1] // not an object, or an object replacing what was there
	}
	keys, groups := groupMembers(all, nil, "")
	vals := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		vals[k] = mergeAll(groups[k])
	}
	return encodeMembers(keys, vals)
}
