package storage

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestWithResourceVersion(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"42","name":"a"},"data":{"k":"v"}}`},
		{`{"metadata":{}}`, `{"metadata":{"resourceVersion":"42"}}`},
		{` { "spec" : {"metadata":{"x":1},"s":"\"metadata\":{"} , "metadata" : { } }`,
			` { "spec" : {"metadata":{"x":1},"s":"\"metadata\":{"} , "metadata" : {"resourceVersion":"42" } }`},
		{`{"a":[1,{"b":"]"}],"n":-1.5e3,"t":true,"metadata":{"name":"x"}}`,
			`{"a":[1,{"b":"]"}],"n":-1.5e3,"t":true,"metadata":{"resourceVersion":"42","name":"x"}}`},
	}
	for _, c := range cases {
		got, err := WithResourceVersion([]byte(c.in), 42)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"metadata":[]}`, `{"a":1}`, `{"metadata":"x"}`, `{"a":"unterminated`} {
		if _, err := WithResourceVersion([]byte(bad), 1); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%q: got %v, want ErrInvalidValue", bad, err)
		}
	}
}

// FuzzWithResourceVersion: for any valid JSON object with a metadata object
// lacking resourceVersion, the result is valid JSON with the RV set and every
// other field unchanged; for anything else it never panics.
func FuzzWithResourceVersion(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","metadata":{"name":"a"}}`))
	f.Add([]byte(`{"x":"\\","metadata":{}}`))
	f.Add([]byte(`{"metadata":{"labels":{"a":"b"}},"y":[{}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := WithResourceVersion(in, 7)
		var obj map[string]any
		if json.Unmarshal(in, &obj) != nil {
			return
		}
		md, ok := obj["metadata"].(map[string]any)
		if !ok {
			return
		}
		if _, has := md["resourceVersion"]; has {
			return
		}
		if err != nil {
			t.Fatalf("valid input %q refused: %v", in, err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("output %q is not JSON: %v", out, err)
		}
		gmd := got["metadata"].(map[string]any)
		if gmd["resourceVersion"] != "7" {
			t.Fatalf("resourceVersion not set in %q", out)
		}
		delete(gmd, "resourceVersion")
		a, _ := json.Marshal(obj)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Fatalf("content changed:\n%s\n%s", a, b)
		}
	})
}
