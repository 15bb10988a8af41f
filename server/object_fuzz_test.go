package server

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzIsCompact: for every valid JSON value, isCompact says exactly
// whether json.Compact would leave it unchanged, so doc.encode writes the
// same bytes with or without the shortcut.
func FuzzIsCompact(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a": 1}`, `"a b"`, `"a\" b"`, `["x\\",1]`, `["x\\", 1]`, "{\n}", `null`, `"\u2028"`, `{"k":"v\t"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var out bytes.Buffer
		if err := json.Compact(&out, raw); err != nil {
			t.Fatal(err)
		}
		if got, want := isCompact(raw), bytes.Equal(out.Bytes(), raw); got != want {
			t.Fatalf("isCompact(%q) = %v, Compact gives %q", raw, got, out.Bytes())
		}
	})
}
