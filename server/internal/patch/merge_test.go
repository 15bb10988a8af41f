package patch

import (
	"errors"
	"testing"
)

func TestMergePatchRFC7386AppendixA(t *testing.T) {
	tests := []struct{ doc, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		// Beyond the appendix: arrays replace wholesale and keep their nulls.
		{`{"a":[1,2]}`, `{"a":[null,{"x":null}]}`, `{"a":[null,{"x":null}]}`},
		// Numbers keep their text.
		{`{"n":10000000000000001}`, `{"m":1.50}`, `{"n":10000000000000001,"m":1.50}`},
		{`{"a":{"b":1}}`, `{"a":{"c":2}}`, `{"a":{"b":1,"c":2}}`},
	}
	for _, tt := range tests {
		got, err := MergePatch([]byte(tt.doc), []byte(tt.patch))
		if err != nil {
			t.Errorf("MergePatch(%s, %s): %v", tt.doc, tt.patch, err)
			continue
		}
		if !sameJSON(t, got, []byte(tt.want)) {
			t.Errorf("MergePatch(%s, %s) = %s, want %s", tt.doc, tt.patch, got, tt.want)
		}
	}
}

func TestMergePatchKeepsNumberText(t *testing.T) {
	got, err := MergePatch([]byte(`{"n":10000000000000001,"f":1e400}`), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"f":1e400,"n":10000000000000001}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestMergePatchErrors(t *testing.T) {
	tests := []struct {
		doc, patch string
		want       error
	}{
		// RFC 7386 lets a non-object patch replace the target; an API object
		// cannot become one, so these are refused.
		{`{"a":"b"}`, `["c"]`, ErrInvalidPatch},
		{`{"a":"foo"}`, `null`, ErrInvalidPatch},
		{`{"a":"foo"}`, `"bar"`, ErrInvalidPatch},
		{`{"a":"foo"}`, `{"a":`, ErrInvalidPatch},
		{`{"a":"foo"}`, `{} {}`, ErrInvalidPatch},
		{`{"a":"foo"}`, ``, ErrInvalidPatch},
		{`[1,2]`, `{"a":"b","c":null}`, ErrInvalidDocument},
		{`{"a":`, `{}`, ErrInvalidDocument},
	}
	for _, tt := range tests {
		_, err := MergePatch([]byte(tt.doc), []byte(tt.patch))
		if !errors.Is(err, tt.want) {
			t.Errorf("MergePatch(%s, %s) error = %v, want %v", tt.doc, tt.patch, err, tt.want)
		}
	}
}
