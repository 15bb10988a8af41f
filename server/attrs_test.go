package server

import (
	"encoding/json"
	"maps"
	"os"
	"testing"
)

// podFields are the pod resource's selectable fields and their values
// when absent.
func podFields(t testing.TB) (map[string][]string, map[string]string) {
	for _, r := range builtinResources() {
		if r.plural == "pods" && r.group == "" {
			return r.fields, r.fieldAbsent
		}
	}
	t.Fatal("no pods resource")
	return nil, nil
}

// productionPod is a production-shaped pod (the bench's fixture) as
// serve stores it.
func productionPod(t testing.TB) []byte {
	b, err := os.ReadFile("testdata/production-pod.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oddFields are selectable fields whose paths share prefixes, end at
// objects, are empty, or replace metadata.name.
var (
	oddFields = map[string][]string{
		"a": {"a"}, "a.b": {"a", "b"}, "a.b.c": {"a", "b", "c"}, "none": nil,
		"metadata.name": {"spec", "name"}, "l": {"metadata", "labels"},
	}
	oddAbsent = map[string]string{"a.b": "false", "none": "0"}
)

// TestAttrFuncPod: the attributes of a production-shaped pod, and of
// edge cases, are those decodeAttrs gives.
func TestAttrFuncPod(t *testing.T) {
	sel, absent := podFields(t)
	pod := productionPod(t)
	labels, fields, err := attrFunc(sel, absent)(pod)
	if err != nil {
		t.Fatal(err)
	}
	if labels["app.kubernetes.io/name"] != "app-0000" || fields["metadata.name"] != "bench-0000007" ||
		fields["metadata.namespace"] != "bench" || fields["spec.hostNetwork"] != "false" || fields["status.phase"] != "Running" {
		t.Fatalf("labels %v\nfields %v", labels, fields)
	}
	for _, v := range [][]byte{
		pod,
		[]byte(`{"metadata":{"name":"x","labels":{"a":1,"b":"\u00e9"}},"metadata":{"name":"y","labels":{"c":"d"}}}`),
		[]byte(`{"spec":{"hostNetwork":true,"nodeName":null},"status":"x"}`),
		[]byte(`{"a":{"b":{"c":1.50}},"spec":{"name":"n"},"metadata":{"name":"m","labels":null}}`),
		[]byte(`{"a":[1,{"b":2}],"metadata":[]}`),
		[]byte(`{"a":{"b":{"c":1e400}}}`),
		[]byte(`null`), []byte(`[]`), []byte(`{"a":`), []byte(``),
	} {
		for _, set := range []struct {
			sel    map[string][]string
			absent map[string]string
		}{{sel, absent}, {oddFields, oddAbsent}} {
			checkAttrs(t, v, set.sel, set.absent)
		}
	}
}

// checkAttrs fails unless attrFunc gives for v what decodeAttrs gives:
// the same labels and fields, or an error; decodeAttrs' error may be
// attrFunc's success only for valid JSON (a number beyond a float64 off
// the fields' paths).
func checkAttrs(t testing.TB, v []byte, sel map[string][]string, absent map[string]string) {
	wl, wf, werr := decodeAttrs(v, sel, absent)
	gl, gf, gerr := attrFunc(sel, absent)(v)
	switch {
	case werr == nil && gerr != nil:
		t.Fatalf("%q: decoded, but attrFunc: %v", v, gerr)
	case werr != nil && gerr == nil && !json.Valid(v):
		t.Fatalf("%q: decodeAttrs: %v, attrFunc: none", v, werr)
	case werr == nil && (!maps.Equal(wl, gl) || !maps.Equal(wf, gf)):
		t.Fatalf("%q:\ndecoded labels %v fields %v\nscanned labels %v fields %v", v, wl, wf, gl, gf)
	}
}

// FuzzAttrFuncAsDecoded: for any value, attrFunc's attributes are those
// of decoding it whole (checkAttrs), for the pods' fields and for
// fields whose paths nest.
func FuzzAttrFuncAsDecoded(f *testing.F) {
	f.Add(productionPod(f))
	f.Add([]byte(`{"metadata":{"name":"x","labels":{"a":1,"b":"\u00e9","\xff":"\xfe"}},"metadata":{"name":"y"}}`))
	f.Add([]byte(`{"a":{"b":{"c":true}},"a":{"b":[1]},"spec":{"name":"n","nodeName":"\"q\""},"status":{"phase":12}}`))
	f.Add([]byte(`{"spec":{"hostNetwork":null},"metadata":{"namespace":{"x":1}}}`))
	sel, absent := podFields(f)
	f.Fuzz(func(t *testing.T, v []byte) {
		checkAttrs(t, v, sel, absent)
		checkAttrs(t, v, oddFields, oddAbsent)
	})
}

// BenchmarkAttrFunc: what the watch cache spends on a production-shaped
// pod's attributes (labels, name, namespace and the pod's selectable
// fields), scanned and decoded whole.
func BenchmarkAttrFunc(b *testing.B) {
	sel, absent := podFields(b)
	pod := productionPod(b)
	b.Run("scan", func(b *testing.B) {
		fn := attrFunc(sel, absent)
		b.ReportAllocs()
		b.SetBytes(int64(len(pod)))
		for b.Loop() {
			if _, _, err := fn(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(pod)))
		for b.Loop() {
			if _, _, err := decodeAttrs(pod, sel, absent); err != nil {
				b.Fatal(err)
			}
		}
	})
}
