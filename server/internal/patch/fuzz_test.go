package patch

import (
	"encoding/json"
	"errors"
	"testing"
)

// checkOutcome is the property every entry point shares: it returns either
// valid JSON holding an object, or an error wrapping one of the documented
// sentinels.
func checkOutcome(t *testing.T, out []byte, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrInvalidPatch) && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalidDocument) {
			t.Fatalf("error %v wraps no sentinel", err)
		}
		return
	}
	if !json.Valid(out) {
		t.Fatalf("output %q is not valid JSON", out)
	}
	if _, ok := mustDecode(t, out).(map[string]any); !ok {
		t.Fatalf("output %q is not a JSON object", out)
	}
}

func FuzzMergePatch(f *testing.F) {
	f.Add([]byte(`{"a":"b","c":{"d":1}}`), []byte(`{"a":null,"c":{"e":[1,null]}}`))
	f.Add([]byte(`{}`), []byte(`{"a":{"bb":{"ccc":null}}}`))
	f.Add([]byte(`{"n":10000000000000001}`), []byte(`{"m":1e400}`))
	f.Add([]byte(`{"a":[1]}`), []byte(`["x"]`))
	f.Fuzz(func(t *testing.T, doc, p []byte) {
		once, err := MergePatch(doc, p)
		checkOutcome(t, once, err)
		if err != nil {
			return
		}
		// Idempotence: a merge patch applied twice equals it applied once.
		twice, err := MergePatch(once, p)
		if err != nil {
			t.Fatalf("second application failed: %v", err)
		}
		if !sameJSON(t, once, twice) {
			t.Fatalf("not idempotent:\n once  %s\n twice %s", once, twice)
		}
	})
}

func FuzzJSONPatch(f *testing.F) {
	f.Add([]byte(`{"foo":["bar","baz"]}`), []byte(`[{"op":"add","path":"/foo/1","value":"qux"}]`))
	f.Add([]byte(`{"/":9,"~1":10}`), []byte(`[{"op":"test","path":"/~01","value":10}]`))
	f.Add([]byte(`{"a":{"b":1}}`), []byte(`[{"op":"move","from":"/a","path":"/c"},{"op":"copy","from":"/c","path":"/c/d"}]`))
	f.Add([]byte(`{"a":[1,2,3]}`), []byte(`[{"op":"remove","path":"/a/-"},{"op":"replace","path":"","value":[]}]`))
	f.Fuzz(func(t *testing.T, doc, p []byte) {
		out, err := JSONPatch(doc, p)
		checkOutcome(t, out, err)
		// An empty patch is the identity.
		if err == nil {
			same, err := JSONPatch(out, []byte(`[]`))
			if err != nil || !sameJSON(t, same, out) {
				t.Fatalf("empty patch changed %s into %s (%v)", out, same, err)
			}
		}
	})
}

func FuzzStrategicMergePatch(f *testing.F) {
	f.Add([]byte(`{"spec":{"containers":[{"name":"a","env":[{"name":"X"}]}]}}`),
		[]byte(`{"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],"containers":[{"name":"b"},{"name":"a","env":[{"name":"X","$patch":"delete"}]}]}}`))
	f.Add([]byte(`{"metadata":{"finalizers":["a","b"],"labels":{"x":"1"}}}`),
		[]byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],"finalizers":["c"],"labels":{"$patch":"replace","y":"2"}}}`))
	f.Add([]byte(`{"spec":{"volumes":[{"name":"v","hostPath":{}}]}}`),
		[]byte(`{"spec":{"volumes":[{"name":"v","emptyDir":{},"$retainKeys":["name","emptyDir"]},{"$patch":"replace"}]}}`))
	f.Add([]byte(`{"a":1}`), []byte(`{"$patch":"delete"}`))
	pod, _ := SchemaFor("", "Pod")
	f.Fuzz(func(t *testing.T, doc, p []byte) {
		out, err := StrategicMergePatch(doc, p, pod)
		checkOutcome(t, out, err)
		out, err = StrategicMergePatch(doc, p, nil)
		checkOutcome(t, out, err)
	})
}
