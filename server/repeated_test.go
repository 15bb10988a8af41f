package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRepeatedTopLevelKeys: a body repeating a top-level key is reported
// as kube reports it (a Warning, or a 400 under Strict) and decoded as
// kube decodes it: a built-in kind's occurrences of an object merge, a
// custom resource keeps the last (checked against kube-apiserver v1.37.2).
func TestRepeatedTopLevelKeys(t *testing.T) {
	e := newEnv(t)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"},"data":{"a":"1"},"data":{"b":"2"},"metadata":{"labels":{"l":"v"}}}`
	named := func(n string) string { return strings.ReplaceAll(body, "NAME", n) }
	r := e.do("POST", cmPath, named("warn"))
	if r.code != 201 || !slices.Equal(r.hdr.Values("Warning"), []string{`299 - "duplicate field \"data\""`, `299 - "duplicate field \"metadata\""`}) {
		t.Fatalf("warn: %d %v %s", r.code, r.hdr.Values("Warning"), r.body)
	}
	got := e.must(200, "GET", cmPath+"/warn", nil)
	if d := got["data"].(map[string]any); len(d) != 2 || d["a"] != "1" || d["b"] != "2" || path(got, "metadata", "labels", "l") != "v" || path(got, "metadata", "name") != "warn" {
		t.Fatalf("merged: %v", got)
	}
	e.expectStatus(400, "BadRequest", `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data", duplicate field "metadata"`,
		"POST", cmPath+"?fieldValidation=Strict", named("strict"))
	if r := e.do("POST", cmPath+"?fieldValidation=Ignore", named("ignore")); r.code != 201 || len(r.hdr.Values("Warning")) != 0 {
		t.Fatalf("ignore: %d %v", r.code, r.hdr.Values("Warning"))
	}

	e.must(201, "POST", crdPath, crdDef("widgets", "Widget", "Namespaced"))
	wpath := "/apis/example.com/v1/namespaces/default/widgets"
	r = e.do("POST", wpath, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"a":1},"spec":{"b":2}}`)
	if r.code != 201 || !slices.Equal(r.hdr.Values("Warning"), []string{`299 - "duplicate field \"spec\""`}) {
		t.Fatalf("custom resource: %d %v %s", r.code, r.hdr.Values("Warning"), r.body)
	}
	var w map[string]any
	if err := json.Unmarshal(r.body, &w); err != nil || len(w["spec"].(map[string]any)) != 1 || path(w, "spec", "b") != float64(2) {
		t.Fatalf("custom resource keeps the last: %v %s", err, r.body)
	}
}

// FuzzTopMembers: topMembers counts what a JSON parser finds at the top
// of any object, and the merge of two values never panics and is JSON.
func FuzzTopMembers(f *testing.F) {
	f.Add([]byte(`{"a":1,"a":{"b":":"},"c":"\"{:"}`), []byte(`{"x":[{"y":1}],"x":{"z":2}}`))
	f.Add([]byte(`{}`), []byte(`null`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if ms, ok := objectMembers(a); ok && json.Valid(a) {
			if n := topMembers(a); n != len(ms) {
				t.Fatalf("topMembers(%q) = %d, want %d", a, n, len(ms))
			}
		}
		if json.Valid(a) && json.Valid(b) {
			if m := mergeJSON(a, b); !json.Valid(m) {
				t.Fatalf("mergeJSON(%q, %q) = %q: not JSON", a, b, m)
			}
		}
	})
}
