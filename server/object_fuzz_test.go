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

// FuzzCompactMembers: for every JSON object json.Marshal writes,
// compactMembers finds the members json.Unmarshal finds, each value's
// bytes unchanged; for any other input it does not panic.
func FuzzCompactMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,{"c":"}"}]},"d":"x\"y","e":null}`,
		`{"<k>":"\u2028","":[]}`, `{"a":"\\"}`, `{"a":1,"a":2}`, `{"a" : 1}`, `[1]`, `{"a":}`, `{"a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := compactMembers(raw) // must not panic, whatever raw is
		var v map[string]any
		if json.Unmarshal(raw, &v) != nil || v == nil {
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if got, ok = compactMembers(b); !ok || len(got) != len(want) {
			t.Fatalf("compactMembers(%q) = %q, %v; want %q", b, got, ok, want)
		}
		for k, w := range want {
			if !bytes.Equal(got[k], w) {
				t.Fatalf("compactMembers(%q)[%q] = %q, want %q", b, k, got[k], w)
			}
		}
	})
}

// FuzzWriteJSONString: writeJSONString writes what json.Marshal writes for
// any string, its shortcut included.
func FuzzWriteJSONString(f *testing.F) {
	for _, s := range []string{"", "name", `a"b`, `a\b`, "<&>", "\u2028", "\x00", "é", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		writeJSONString(&b, s)
		want, _ := json.Marshal(s)
		if !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("writeJSONString(%q) = %s, json.Marshal gives %s", s, b.Bytes(), want)
		}
	})
}
