package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestWithResourceVersion(t *testing.T) {
	cases := []struct{ in, want string }{
		// A built-in object as serve stores it, in kube's typed order
		// ("kind" first): after the last of name, generateName,
		// namespace, selfLink and uid, as ObjectMeta's Go order has it.
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"u","creationTimestamp":null,"labels":{"resourceVersion":"1"}},"data":{"k":"v"}}`,
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"42","creationTimestamp":null,"labels":{"resourceVersion":"1"}},"data":{"k":"v"}}`},
		{`{"kind":"Pod","apiVersion":"v1","metadata":{"generateName":"p-","generation":2,"creationTimestamp":null}}`,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"generateName":"p-","resourceVersion":"42","generation":2,"creationTimestamp":null}}`},
		{`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"a","generateName":"g","namespace":"n","selfLink":"s","uid":"u"}}`,
			`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"a","generateName":"g","namespace":"n","selfLink":"s","uid":"u","resourceVersion":"42"}}`},
		{`{"kind":"X","metadata":{"creationTimestamp":null,"name":"a"}}`, `{"kind":"X","metadata":{"resourceVersion":"42","creationTimestamp":null,"name":"a"}}`},
		{`{"kind":"X","metadata":{ }}`, `{"kind":"X","metadata":{"resourceVersion":"42" }}`},
		// A custom resource, encoding/json of its map: among metadata's
		// members by name.
		{`{"apiVersion":"g/v1","kind":"G","metadata":{"annotations":{"a":"b"},"creationTimestamp":"t","name":"a","namespace":"n","uid":"u"},"spec":{}}`,
			`{"apiVersion":"g/v1","kind":"G","metadata":{"annotations":{"a":"b"},"creationTimestamp":"t","name":"a","namespace":"n","resourceVersion":"42","uid":"u"},"spec":{}}`},
		{`{"apiVersion":"g/v1","kind":"G","metadata":{"managedFields":[{"f:resourceVersion":{}}],"name":"a"}}`,
			`{"apiVersion":"g/v1","kind":"G","metadata":{"managedFields":[{"f:resourceVersion":{}}],"name":"a","resourceVersion":"42"}}`},
		{`{"Top":1,"apiVersion":"g/v1","metadata":{"selfLink":"s","uid":"u"}}`,
			`{"Top":1,"apiVersion":"g/v1","metadata":{"resourceVersion":"42","selfLink":"s","uid":"u"}}`},
		// A built-in object an earlier serve stored (apiVersion first,
		// metadata's members by name) reads as sorted too.
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"42"},"data":{"k":"v"}}`},
		{`{"metadata":{}}`, `{"metadata":{"resourceVersion":"42"}}`},
		{` { "spec" : {"metadata":{"x":1},"s":"\"metadata\":{"} , "metadata" : { } }`,
			` { "spec" : {"metadata":{"x":1},"s":"\"metadata\":{"} , "metadata" : {"resourceVersion":"42" } }`},
		{`{"a":[1,{"b":"]"}],"n":-1.5e3,"t":true,"metadata":{"name":"x", "uid" : "u"}}`,
			`{"a":[1,{"b":"]"}],"n":-1.5e3,"t":true,"metadata":{"name":"x","resourceVersion":"42", "uid" : "u"}}`},
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
	for _, bad := range []string{``, `[]`, `{"metadata":[]}`, `{"a":1}`, `{"metadata":"x"}`, `{"a":"unterminated`, `{"metadata":{"name":}}`} {
		if _, err := WithResourceVersion([]byte(bad), 1); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%q: got %v, want ErrInvalidValue", bad, err)
		}
	}
}

// TestSetResourceVersion: a version is replaced where it sits, in kube's
// typed order, in a custom resource's sorted order and first in metadata
// (values an earlier serve stored), without a decode; a value without one
// gets it where WithResourceVersion puts it.
func TestSetResourceVersion(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"resourceVersion":"1"}},"data":{"z":"1","a":"2"}}`,
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"7","labels":{"resourceVersion":"1"}},"data":{"z":"1","a":"2"}}`},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","uid":"u","resourceVersion":"12","labels":{"resourceVersion":"1"}},"data":{"z":"1","a":"2"}}`,
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","uid":"u","resourceVersion":"7","labels":{"resourceVersion":"1"}},"data":{"z":"1","a":"2"}}`},
		{`{"apiVersion":"g/v1","kind":"G","metadata":{"annotations":{"resourceVersion":"x"},"name":"a","resourceVersion":"3","uid":"u"},"spec":{"z":1,"a":2}}`,
			`{"apiVersion":"g/v1","kind":"G","metadata":{"annotations":{"resourceVersion":"x"},"name":"a","resourceVersion":"7","uid":"u"},"spec":{"z":1,"a":2}}`},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"123","name":"a"},"data":{"z":"1","a":"2"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"7","name":"a"},"data":{"z":"1","a":"2"}}`},
		// Not as this package writes it: decoded and encoded again.
		{`{"metadata":{"resource\u0056ersion":"3"},"b":1,"a":2}`, `{"a":2,"b":1,"metadata":{"resourceVersion":"7"}}`},
		{`{"metadata":{"resourceVersion":3},"b":1,"a":2}`, `{"a":2,"b":1,"metadata":{"resourceVersion":"7"}}`},
	}
	for _, c := range cases {
		got, err := SetResourceVersion([]byte(c.in), 7)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
	same := []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"7"}}`)
	if got, err := SetResourceVersion(same, 7); err != nil || &got[0] != &same[0] {
		t.Errorf("a value at its version: got %s, %v; want the same bytes", got, err)
	}
	for _, bad := range []string{``, `[]`, `{"metadata":"x"}`, `{"a":"unterminated`} {
		if _, err := SetResourceVersion([]byte(bad), 1); !errors.Is(err, ErrInvalidValue) {
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
	f.Add([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"u","generation":1}}`))
	f.Add([]byte(`{"apiVersion":"g/v1","kind":"G","metadata":{"annotations":{},"name":"a","namespace":"n","uid":"u"}}`))
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
		// The version's place: kube's typed order after a "kind" first,
		// else by name (names without escapes, one metadata member).
		first, keys, ok := metadataKeys(out)
		if !ok || bytes.IndexByte(in, '\\') >= 0 {
			return
		}
		at := slices.Index(keys, "resourceVersion")
		rest := slices.Delete(slices.Clone(keys), at, at+1)
		want := 0
		if first == "kind" {
			for want < len(rest) && slices.Contains([]string{"name", "generateName", "namespace", "selfLink", "uid"}, rest[want]) {
				want++
			}
		} else {
			for want < len(rest) && rest[want] <= "resourceVersion" {
				want++
			}
		}
		if at != want {
			t.Fatalf("resourceVersion at %d of %q, want %d: %s", at, keys, want, out)
		}
		// SetResourceVersion finds it there, and puts it back there.
		again, err := SetResourceVersion(out, 8)
		if err != nil {
			t.Fatalf("SetResourceVersion(%s): %v", out, err)
		}
		if want := bytes.Replace(out, []byte(`"resourceVersion":"7"`), []byte(`"resourceVersion":"8"`), 1); !bytes.Equal(again, want) {
			t.Fatalf("SetResourceVersion(%s) = %s, want %s", out, again, want)
		}
	})
}

// metadataKeys is b's first member name and the names of the members of
// its top-level "metadata" object, in order; false unless b is a JSON
// object with exactly one member named "metadata" (in any case), an
// object.
func metadataKeys(b []byte) (first string, keys []string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", nil, false
	}
	n, at := 0, 0
	for ; dec.More(); at++ {
		tok, err := dec.Token()
		if err != nil {
			return "", nil, false
		}
		name, _ := tok.(string)
		if at == 0 {
			first = name
		}
		if strings.EqualFold(name, "metadata") {
			n++
			if name != "metadata" || n > 1 {
				return "", nil, false
			}
			if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
				return "", nil, false
			}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return "", nil, false
				}
				keys = append(keys, tok.(string))
				var v json.RawMessage
				if dec.Decode(&v) != nil {
					return "", nil, false
				}
			}
			if _, err := dec.Token(); err != nil {
				return "", nil, false
			}
			continue
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return "", nil, false
		}
	}
	return first, keys, n == 1
}
