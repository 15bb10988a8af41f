package patch

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestJSONPatchRFC6902AppendixA(t *testing.T) {
	tests := []struct {
		name, doc, patch, want string
		err                    error
	}{
		{"A.1 add object member", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux"}]`, `{"baz":"qux","foo":"bar"}`, nil},
		{"A.2 add array element", `{"foo":["bar","baz"]}`, `[{"op":"add","path":"/foo/1","value":"qux"}]`, `{"foo":["bar","qux","baz"]}`, nil},
		{"A.3 remove object member", `{"baz":"qux","foo":"bar"}`, `[{"op":"remove","path":"/baz"}]`, `{"foo":"bar"}`, nil},
		{"A.4 remove array element", `{"foo":["bar","qux","baz"]}`, `[{"op":"remove","path":"/foo/1"}]`, `{"foo":["bar","baz"]}`, nil},
		{"A.5 replace", `{"baz":"qux","foo":"bar"}`, `[{"op":"replace","path":"/baz","value":"boo"}]`, `{"baz":"boo","foo":"bar"}`, nil},
		{"A.6 move value", `{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}`, `[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]`, `{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}`, nil},
		{"A.7 move array element", `{"foo":["all","grass","cows","eat"]}`, `[{"op":"move","from":"/foo/1","path":"/foo/3"}]`, `{"foo":["all","cows","eat","grass"]}`, nil},
		{"A.8 test success", `{"baz":"qux","foo":["a",2,"c"]}`, `[{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]`, `{"baz":"qux","foo":["a",2,"c"]}`, nil},
		{"A.9 test error", `{"baz":"qux"}`, `[{"op":"test","path":"/baz","value":"bar"}]`, ``, ErrTestFailed},
		{"A.10 add nested member", `{"foo":"bar"}`, `[{"op":"add","path":"/child","value":{"grandchild":{}}}]`, `{"foo":"bar","child":{"grandchild":{}}}`, nil},
		{"A.11 unrecognized members", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux","xyz":123}]`, `{"foo":"bar","baz":"qux"}`, nil},
		{"A.12 add to nonexistent target", `{"foo":"bar"}`, `[{"op":"add","path":"/baz/bat","value":"qux"}]`, ``, ErrConflict},
		// A.13: duplicate "op" members. encoding/json keeps the last one, so
		// this becomes a remove of a missing member, which fails.
		{"A.13 invalid patch document", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux","op":"remove"}]`, ``, ErrConflict},
		{"A.14 ~ escape ordering", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":10}]`, `{"/":9,"~1":10}`, nil},
		{"A.15 string is not number", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":"10"}]`, ``, ErrTestFailed},
		{"A.16 add array value", `{"foo":["bar"]}`, `[{"op":"add","path":"/foo/-","value":["abc","def"]}]`, `{"foo":["bar",["abc","def"]]}`, nil},
	}
	runJSONPatchTable(t, tests)
}

func TestJSONPatchOperations(t *testing.T) {
	tests := []struct {
		name, doc, patch, want string
		err                    error
	}{
		{"add replaces member", `{"a":1}`, `[{"op":"add","path":"/a","value":2}]`, `{"a":2}`, nil},
		{"add at end index", `{"a":[1]}`, `[{"op":"add","path":"/a/1","value":2}]`, `{"a":[1,2]}`, nil},
		{"add past end", `{"a":[1]}`, `[{"op":"add","path":"/a/2","value":2}]`, ``, ErrConflict},
		{"add leading zero index", `{"a":[1,2]}`, `[{"op":"add","path":"/a/01","value":2}]`, ``, ErrConflict},
		{"add negative index", `{"a":[1,2]}`, `[{"op":"add","path":"/a/-1","value":2}]`, ``, ErrConflict},
		{"add null value", `{}`, `[{"op":"add","path":"/a","value":null}]`, `{"a":null}`, nil},
		{"add whole document", `{"a":1}`, `[{"op":"add","path":"","value":{"b":2}}]`, `{"b":2}`, nil},
		{"add whole document non-object", `{"a":1}`, `[{"op":"add","path":"","value":[1]}]`, ``, ErrConflict},
		{"add through scalar", `{"a":1}`, `[{"op":"add","path":"/a/b","value":1}]`, ``, ErrConflict},
		{"slash and tilde keys", `{}`, `[{"op":"add","path":"/a~1b","value":1},{"op":"add","path":"/c~0d","value":2}]`, `{"a/b":1,"c~d":2}`, nil},
		{"empty key", `{}`, `[{"op":"add","path":"/","value":1}]`, `{"":1}`, nil},
		{"remove missing", `{"a":1}`, `[{"op":"remove","path":"/b"}]`, ``, ErrConflict},
		{"remove past end", `{"a":[1]}`, `[{"op":"remove","path":"/a/1"}]`, ``, ErrConflict},
		{"remove dash", `{"a":[1]}`, `[{"op":"remove","path":"/a/-"}]`, ``, ErrConflict},
		{"remove root", `{"a":1}`, `[{"op":"remove","path":""}]`, ``, ErrConflict},
		{"replace missing", `{"a":1}`, `[{"op":"replace","path":"/b","value":2}]`, ``, ErrConflict},
		{"replace array element", `{"a":[1,2]}`, `[{"op":"replace","path":"/a/0","value":3}]`, `{"a":[3,2]}`, nil},
		{"replace root", `{"a":1}`, `[{"op":"replace","path":"","value":{"z":0}}]`, `{"z":0}`, nil},
		{"move to same place", `{"a":1}`, `[{"op":"move","from":"/a","path":"/a"}]`, `{"a":1}`, nil},
		{"move missing", `{"a":1}`, `[{"op":"move","from":"/b","path":"/c"}]`, ``, ErrConflict},
		{"move into child", `{"a":{"b":1}}`, `[{"op":"move","from":"/a","path":"/a/b/c"}]`, ``, ErrInvalidPatch},
		{"move to sibling prefix name", `{"a":{"b":1}}`, `[{"op":"move","from":"/a","path":"/ab"}]`, `{"ab":{"b":1}}`, nil},
		{"copy is deep", `{"a":{"b":1}}`, `[{"op":"copy","from":"/a","path":"/c"},{"op":"replace","path":"/c/b","value":2}]`, `{"a":{"b":1},"c":{"b":2}}`, nil},
		{"copy array element to end", `{"a":[1,2]}`, `[{"op":"copy","from":"/a/0","path":"/a/-"}]`, `{"a":[1,2,1]}`, nil},
		{"test number by value", `{"a":1.0}`, `[{"op":"test","path":"/a","value":1}]`, `{"a":1.0}`, nil},
		{"test object unordered", `{"a":{"x":1,"y":[1,2]}}`, `[{"op":"test","path":"/a","value":{"y":[1,2],"x":1}}]`, `{"a":{"x":1,"y":[1,2]}}`, nil},
		{"test array ordered", `{"a":[1,2]}`, `[{"op":"test","path":"/a","value":[2,1]}]`, ``, ErrTestFailed},
		{"test missing", `{}`, `[{"op":"test","path":"/a","value":null}]`, ``, ErrConflict},
		{"test null", `{"a":null}`, `[{"op":"test","path":"/a","value":null}]`, `{"a":null}`, nil},
		{"failed op undoes nothing visible", `{"a":1}`, `[{"op":"add","path":"/b","value":2},{"op":"test","path":"/a","value":3}]`, ``, ErrTestFailed},
		{"big numbers survive", `{"a":10000000000000001}`, `[{"op":"copy","from":"/a","path":"/b"}]`, `{"a":10000000000000001,"b":10000000000000001}`, nil},
		{"empty patch", `{"a":1}`, `[]`, `{"a":1}`, nil},
		// Malformed patches.
		{"not an array", `{}`, `{"op":"add"}`, ``, ErrInvalidPatch},
		{"op not object", `{}`, `[1]`, ``, ErrInvalidPatch},
		{"unknown op", `{}`, `[{"op":"frob","path":"/a"}]`, ``, ErrInvalidPatch},
		{"missing op", `{}`, `[{"path":"/a"}]`, ``, ErrInvalidPatch},
		{"missing path", `{}`, `[{"op":"remove"}]`, ``, ErrInvalidPatch},
		{"missing value", `{}`, `[{"op":"add","path":"/a"}]`, ``, ErrInvalidPatch},
		{"missing from", `{}`, `[{"op":"copy","path":"/a"}]`, ``, ErrInvalidPatch},
		{"path not string", `{}`, `[{"op":"remove","path":1}]`, ``, ErrInvalidPatch},
		{"pointer without slash", `{"a":1}`, `[{"op":"remove","path":"a"}]`, ``, ErrInvalidPatch},
		{"bad escape", `{"a":1}`, `[{"op":"remove","path":"/a~2"}]`, ``, ErrInvalidPatch},
		{"trailing tilde", `{"a":1}`, `[{"op":"remove","path":"/a~"}]`, ``, ErrInvalidPatch},
		{"trailing data", `{}`, `[] []`, ``, ErrInvalidPatch},
		{"truncated", `{}`, `[{"op":"add","path":"/a","value":1}`, ``, ErrInvalidPatch},
	}
	runJSONPatchTable(t, tests)
}

func runJSONPatchTable(t *testing.T, tests []struct {
	name, doc, patch, want string
	err                    error
}) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := JSONPatch([]byte(tt.doc), []byte(tt.patch))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !sameJSON(t, got, []byte(tt.want)) {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestJSONPatchTestFailedIsConflict(t *testing.T) {
	_, err := JSONPatch([]byte(`{"a":1}`), []byte(`[{"op":"test","path":"/a","value":2}]`))
	if !errors.Is(err, ErrTestFailed) || !errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidPatch) {
		t.Fatalf("error %v should match ErrTestFailed and ErrConflict only", err)
	}
}

func TestJSONPatchOperationLimit(t *testing.T) {
	op := `{"op":"test","path":"/a","value":1}`
	build := func(n int) []byte {
		return []byte("[" + strings.TrimSuffix(strings.Repeat(op+",", n), ",") + "]")
	}
	if _, err := JSONPatch([]byte(`{"a":1}`), build(MaxOperations)); err != nil {
		t.Fatalf("%d operations should be accepted: %v", MaxOperations, err)
	}
	_, err := JSONPatch([]byte(`{"a":1}`), build(MaxOperations+1))
	if !errors.Is(err, ErrTooManyOperations) || !errors.Is(err, ErrInvalidPatch) {
		t.Fatalf("%d operations: error = %v, want ErrTooManyOperations and ErrInvalidPatch", MaxOperations+1, err)
	}
}

func TestJSONPatchCopyAmplificationRefused(t *testing.T) {
	// Each copy doubles the document; without a budget 60 of them would need
	// 2^60 nodes.
	var ops []string
	ops = append(ops, `{"op":"add","path":"/a","value":["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]}`)
	for i := 0; i < 60; i++ {
		ops = append(ops, `{"op":"copy","from":"/a","path":"/a/-"}`)
	}
	_, err := JSONPatch([]byte(`{}`), []byte("["+strings.Join(ops, ",")+"]"))
	if !errors.Is(err, ErrInvalidPatch) {
		t.Fatalf("error = %v, want ErrInvalidPatch", err)
	}
}

func TestJSONPatchDeepResultRefused(t *testing.T) {
	// Adds build a chain one level deeper each time; past MaxDepth the
	// result is refused rather than encoded.
	var ops []string
	path := ""
	for i := 0; i <= MaxDepth; i++ {
		path += "/x"
		ops = append(ops, fmt.Sprintf(`{"op":"add","path":%q,"value":{}}`, path))
	}
	_, err := JSONPatch([]byte(`{}`), []byte("["+strings.Join(ops, ",")+"]"))
	if !errors.Is(err, ErrInvalidPatch) {
		t.Fatalf("error = %v, want ErrInvalidPatch", err)
	}
}
