package server

import (
	"bytes"
	"encoding/json"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/listwatch/listwatch/server/internal/jsonscan"
)

// keyOrdered is b, a custom resource to store, as kube-apiserver stores
// it: encoding/json of its unstructured map, decoded as kube's
// unstructured decoder decodes it (k8s.io/apimachinery's util/json:
// integers as int64, other numbers float64). So every object's keys are
// in order, at every depth, a number is written as Go writes its int64 or
// float64 (1e3 as 1000, 2.50 as 2.5), and a string as encoding/json
// writes it (<, > and & escaped). b is returned as it is if it does not
// decode (the server's values always do). It is for the write path only:
// reads send the stored bytes.
func keyOrdered(b []byte) []byte {
	var v any
	if err := utiljson.Unmarshal(b, &v); err != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// keyMember is one member of an object: its name as decoded and where
// its name and value are written.
type keyMember struct {
	name                     []byte
	nameAt, nameEnd, at, end int
}

// orderMembers reads the members of the object that starts at b[i] (a
// '{'); end is the index after it, -1 if it is not one.
func orderMembers(b []byte, i int) (ms []keyMember, end int) {
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, -1
		}
		nameEnd, escaped := jsonscan.SkipString(b, i)
		if nameEnd < 0 {
			return nil, -1
		}
		name := b[i+1 : nameEnd-1]
		if escaped {
			var s string
			if json.Unmarshal(b[i:nameEnd], &s) != nil {
				return nil, -1
			}
			name = []byte(s)
		}
		j := jsonscan.SkipSpace(b, nameEnd)
		if j >= len(b) || b[j] != ':' {
			return nil, -1
		}
		at := jsonscan.SkipSpace(b, j+1)
		vend := jsonscan.SkipValue(b, at)
		if vend < 0 {
			return nil, -1
		}
		ms = append(ms, keyMember{name: name, nameAt: i, nameEnd: nameEnd, at: at, end: vend})
		i = jsonscan.SkipSpace(b, vend)
		switch {
		case i < len(b) && b[i] == ',':
			i = jsonscan.SkipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return ms, i + 1
		default:
			return nil, -1
		}
	}
}

// withTopString is the JSON object b with its top-level member name, a
// string without escapes, set to v (a string without escapes to write);
// b as it is if it has no such member.
func withTopString(b []byte, name, v string) []byte {
	ms, end := orderMembers(b, jsonscan.SkipSpace(b, 0))
	if end < 0 {
		return b
	}
	for _, m := range ms {
		if string(m.name) != name || b[m.at] != '"' {
			continue
		}
		if bytes.IndexByte(b[m.at+1:m.end-1], '\\') >= 0 || string(b[m.at+1:m.end-1]) == v {
			return b
		}
		out := make([]byte, 0, len(b)+len(v))
		out = append(out, b[:m.at+1]...)
		out = append(out, v...)
		return append(out, b[m.end-1:]...)
	}
	return b
}
