package server

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"
)

// FuzzValidUTF8: for any JSON text, validUTF8 gives valid UTF-8 JSON with
// no escaped lone surrogate that means what the input meant to a Go
// decoder (which is what kube-apiserver stores).
func FuzzValidUTF8(f *testing.F) {
	f.Add([]byte("{\"a\xff\":\"b\xc3\x28\"}"))
	f.Add([]byte(`["\ud800","\ud83d\ude00","\udc00\ud800","\\ud800"]`))
	f.Add([]byte("\"\xed\xa0\x80\xf4\x90\x80\x80\""))
	f.Add([]byte(`{"ok":"€"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		out := validUTF8(in)
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("validUTF8(%q) = %q", in, out)
		}
		if hasLoneSurrogateEscape(out) {
			t.Fatalf("validUTF8(%q) = %q keeps a lone surrogate", in, out)
		}
		var a, b any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
	})
}

// hasLoneSurrogateEscape reports whether a string in JSON text b has a \u
// escape of a surrogate that is not half of a high-low pair.
func hasLoneSurrogateEscape(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		switch {
		case !inString:
			inString = b[i] == '"'
		case b[i] == '"':
			inString = false
		case b[i] == '\\' && i+1 < len(b) && b[i+1] == 'u':
			r, _ := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			switch {
			case r >= 0xd800 && r < 0xdc00:
				if i+12 > len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
					return true
				}
				r2, _ := strconv.ParseUint(string(b[i+8:i+12]), 16, 16)
				if r2 < 0xdc00 || r2 > 0xdfff {
					return true
				}
				i += 11
			case r >= 0xdc00 && r <= 0xdfff:
				return true
			default:
				i += 5
			}
		case b[i] == '\\':
			i++
		}
	}
	return false
}
