package object

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestKeys(t *testing.T) {
	for _, c := range []struct{ ns, name, key string }{{"", "a", "a"}, {"ns", "a", "ns/a"}} {
		if k := NewKey(c.ns, c.name); k != c.key {
			t.Fatalf("NewKey = %q", k)
		}
		ns, n, err := SplitKey(c.key)
		if err != nil || ns != c.ns || n != c.name {
			t.Fatalf("SplitKey(%q) = %q %q %v", c.key, ns, n, err)
		}
	}
	for _, bad := range []string{"a/b/c", "/a", "a/"} {
		if _, _, err := SplitKey(bad); err == nil {
			t.Errorf("SplitKey(%q) accepted", bad)
		}
	}
}

func TestUnstructured(t *testing.T) {
	var u *Unstructured
	in := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"9","labels":{"x":"y"}},"data":{"n":"1"},"big":10000000000000001}`
	if err := json.Unmarshal([]byte(in), &u); err != nil {
		t.Fatal(err)
	}
	if Key(u) != "ns/a" || u.GetResourceVersion() != "9" || u.GetLabels()["x"] != "y" || u.GetKind() != "ConfigMap" {
		t.Fatalf("accessors wrong: %+v", u.Object)
	}
	out, _ := json.Marshal(u)
	if !json.Valid(out) || !strings.Contains(string(out), "10000000000000001") {
		t.Fatalf("number not preserved: %s", out)
	}
	c := u.DeepCopy()
	c.SetLabels(map[string]string{"z": "w"})
	c.SetResourceVersion("10")
	if u.GetLabels()["x"] != "y" || u.GetResourceVersion() != "9" {
		t.Fatal("DeepCopy shares state")
	}
	c.SetLabels(nil)
	if c.GetLabels() != nil {
		t.Fatal("SetLabels(nil) kept labels")
	}
	var zero Unstructured
	if zero.GetName() != "" || zero.GetLabels() != nil {
		t.Fatal("zero value not empty")
	}
	zero.SetName("n")
	if zero.GetName() != "n" {
		t.Fatal("SetName on zero value")
	}
}

// FuzzUnstructured: decoding arbitrary bytes never panics, and any decoded
// object re-encodes to JSON that decodes to the same accessors.
func FuzzUnstructured(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","labels":{"k":"v"}}}`))
	f.Add([]byte(`{"metadata":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var u Unstructured
		if err := json.Unmarshal(in, &u); err != nil {
			return
		}
		out, err := json.Marshal(&u)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var v Unstructured
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		if Key(&u) != Key(&v) || len(u.GetLabels()) != len(v.GetLabels()) {
			t.Fatalf("round trip changed %s", in)
		}
	})
}

// namedUID mirrors k8s.io/apimachinery's types.UID: a named string type.
type namedUID string

type uidObject struct{ Unstructured }

func (o *uidObject) GetUID() namedUID { return namedUID(o.Unstructured.GetUID()) }

type noUIDObject struct{ uidObject }

func (o *noUIDObject) GetUID() int { return 7 }

func TestUID(t *testing.T) {
	u := &Unstructured{}
	u.SetNested("abc", "metadata", "uid")
	if got := UID(u); got != "abc" {
		t.Errorf("Unstructured: %q", got)
	}
	typed := &uidObject{Unstructured: *u.DeepCopy()}
	if got := UID(typed); got != "abc" {
		t.Errorf("GetUID returning a named string type: %q", got)
	}
	if got := UID(&noUIDObject{}); got != "" {
		t.Errorf("GetUID returning an int: %q, want none", got)
	}
	var nilTyped *uidObject
	if got := UID(nilTyped); got != "" {
		t.Errorf("nil pointer: %q", got)
	}
}
