package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestSkipValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		at   int
		want int
	}{
		{`"a\"b" x`, 0, 6},
		{`{"a":[1,{"b":"}"}],"c":"\\"}`, 0, 28},
		{`[[]] `, 0, 4},
		{`12,`, 0, 2},
		{`true}`, 0, 4},
		{`,`, 0, -1},
		{`"open`, 0, -1},
		{`{"a":[}`, 0, -1},
		{``, 0, -1},
		{`x`, 1, -1},
		{`x`, -1, -1},
	} {
		if got := SkipValue([]byte(c.in), c.at); got != c.want {
			t.Errorf("SkipValue(%q, %d) = %d, want %d", c.in, c.at, got, c.want)
		}
	}
}

func TestSkipString(t *testing.T) {
	for _, c := range []struct {
		in  string
		end int
		esc bool
	}{
		{`"plain" `, 7, false},
		{`"a\"b"`, 6, true},
		{`"a\\"b"`, 5, true},
		{`"\u0041"`, 8, true},
		{`"`, -1, false},
		{`"a\"`, -1, true},
	} {
		end, esc := SkipString([]byte(c.in), 0)
		if end != c.end || esc != c.esc {
			t.Errorf("SkipString(%q) = %d, %v; want %d, %v", c.in, end, esc, c.end, c.esc)
		}
	}
}

// FuzzSkipValue checks the scan against encoding/json: on valid JSON the
// value ends where the text does (but for trailing space), each string a
// tokenizer reads is where SkipString says, and on any input the result is
// -1 or an index in range.
func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":"b\"c","d":[1,2,{"e":null}]}`, ` "x" `, `[`, `"\\"`, `-1.5e3`, `{"a":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i := SkipSpace(b, 0)
		end := SkipValue(b, i)
		if end < -1 || end > len(b) || (end >= 0 && end <= i) {
			t.Fatalf("SkipValue(%q, %d) = %d: out of range", b, i, end)
		}
		if !json.Valid(b) {
			return
		}
		if want := len(bytes.TrimRight(b, " \t\r\n")); end != want {
			t.Fatalf("SkipValue(%q) = %d, want %d", b, end, want)
		}
		// Every string token, key or value, ends where SkipString says.
		d := json.NewDecoder(bytes.NewReader(b))
		for {
			before := int(d.InputOffset())
			tok, err := d.Token()
			if err != nil {
				break
			}
			if _, ok := tok.(string); !ok {
				continue
			}
			at := before + bytes.IndexByte(b[before:], '"')
			got, esc := SkipString(b, at)
			if got != int(d.InputOffset()) {
				t.Fatalf("SkipString(%q, %d) = %d, want %d", b, at, got, d.InputOffset())
			}
			if esc != (bytes.IndexByte(b[at:got], '\\') >= 0) {
				t.Fatalf("SkipString(%q, %d): escaped = %v", b, at, esc)
			}
		}
	})
}
