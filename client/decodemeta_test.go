package client

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/testbodies"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// caseSensitive decodes data into a testPod as Kubernetes' case-sensitive
// decoders would (client-go's: sigs.k8s.io/json's
// UnmarshalCaseSensitivePreserveInts): at each level decodeObject
// guards (the object's apiVersion, kind and metadata, metadata's fields,
// each owner reference's), a key that is not exactly a field's name is no
// field at all. It works on maps, not on the raw bytes decodeObject
// scans: it drops each key that encoding/json would fold into a field
// (bytes.EqualFold) without being spelled so, then decodes what is left
// with encoding/json. The comparison with client-go itself is
// server/compat/client's TestDecodeObjectLikeClientGoProperty.
func caseSensitive(data []byte) (*testPod, error) {
	top := []string{"apiVersion", "kind", "metadata"}
	meta := jsonNames(reflect.TypeFor[ObjectMeta]())
	owner := jsonNames(reflect.TypeFor[testOwnerRef]())
	filtered, err := dropFolded(data, top, func(key string, v json.RawMessage) (json.RawMessage, error) {
		if key != "metadata" {
			return v, nil
		}
		return dropFolded(v, meta, func(key string, v json.RawMessage) (json.RawMessage, error) {
			if key != "ownerReferences" {
				return v, nil
			}
			var refs []json.RawMessage
			var err error
			if json.Unmarshal(v, &refs) != nil {
				return v, nil // not an array: encoding/json fails on it alike
			}
			for i := range refs {
				if refs[i], err = dropFolded(refs[i], owner, nil); err != nil {
					return nil, err
				}
			}
			return json.Marshal(refs)
		})
	})
	if err != nil {
		return nil, err
	}
	var p *testPod
	if err := json.Unmarshal(filtered, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// jsonNames is the JSON names of t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// dropFolded returns the JSON object data without its members whose key
// folds to one of names but differs from it, each kept member's value
// passed through child (when not nil). Order and duplicate keys are kept,
// as encoding/json decodes duplicates one after the other. Data that is
// not a valid JSON object is returned as it is.
func dropFolded(data []byte, names []string, child func(string, json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	if !json.Valid(data) {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return data, nil
	}
	out := []byte{'{'}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		drop := false
		for _, n := range names {
			if key != n && strings.EqualFold(key, n) {
				drop = true
				break
			}
			if key == n && child != nil {
				if v, err = child(key, v); err != nil {
					return nil, err
				}
			}
		}
		if drop {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(key)
		out = append(append(append(out, kb...), ':'), v...)
	}
	return append(out, '}'), nil
}

// checkLikeClientGo decodes data with our decoder and with a
// case-sensitive one, and compares what informers and listers read.
func checkLikeClientGo(t *testing.T, data []byte) {
	t.Helper()
	want, err := caseSensitive(data)
	if err != nil || want == nil {
		return // not a pod to client-go either
	}
	var got *testPod
	if err := decodeObject(data, &got); err != nil {
		t.Fatalf("decodeObject(%s): %v", data, err)
	}
	if !reflect.DeepEqual(got.ObjectMeta, want.ObjectMeta) || got.APIVersion != want.APIVersion || got.Kind != want.Kind {
		t.Fatalf("decoding %s\ngot  %+v\nwant %+v", data, got, want)
	}
}

func TestDecodeObjectIgnoresCaseVariants(t *testing.T) {
	data := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","resourceVersion":"7","resourceversion":"1","Name":"b","namespace":"ns"},"METADATA":{"uid":"x"}}`)
	var p *testPod
	if err := decodeObject(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "a" || p.ResourceVersion != "7" || p.Namespace != "ns" || p.UID != "" {
		t.Fatalf("got %+v", p.ObjectMeta)
	}
	// Lists and watch events go through the same decoding.
	list := []byte(`{"kind":"PodList","metadata":{"resourceVersion":"9","ResourceVersion":"2"},"items":[` + string(data) + `]}`)
	var l wire.List[*testPod]
	if err := decodeList[*testPod](list, &l); err != nil {
		t.Fatal(err)
	}
	if l.Metadata.ResourceVersion != "9" || len(l.Items) != 1 || l.Items[0].ResourceVersion != "7" || l.Items[0].Name != "a" {
		t.Fatalf("list: %+v, %+v", l.Metadata, l.Items)
	}
	ev, err := newWatchDecoder[*testPod](strings.NewReader(`{"type":"ADDED","object":` + string(data) + `}`)).next()
	if err != nil || ev.Object.ResourceVersion != "7" || ev.Object.Name != "a" {
		t.Fatalf("watch: %v %+v", err, ev)
	}
}

func TestDecodeObjectCaseSensitiveProperty(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	for seed := range uint64(n) {
		checkLikeClientGo(t, testbodies.HostilePod(seed))
	}
}

// FuzzDecodeObjectMeta: whatever the spelling of metadata keys, our typed
// decoding reads the same metadata as a case-sensitive one (see
// caseSensitive).
func FuzzDecodeObjectMeta(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","NAME":"b","resourceVersion":"2","reſourceVersion":"1"}}`), uint64(0))
	f.Add([]byte(`{"Metadata":{"name":"x"},"metadata":{"ownerReferences":[{"UID":"u","uid":"v"}]}}`), uint64(1))
	f.Add([]byte(`{}`), uint64(2))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		checkLikeClientGo(t, data)
		checkLikeClientGo(t, testbodies.HostilePod(seed))
		if clean, changed := stripFolded(data, objectKeys); changed && json.Valid(data) && !json.Valid(clean) {
			t.Fatalf("stripping %s gave invalid JSON %s", data, clean)
		}
	})
}

// BenchmarkDecodePod compares decoding a realistic pod with encoding/json
// alone and with decodeObject's key check on top.
func BenchmarkDecodePod(b *testing.B) {
	p := benchPod(1)
	p.OwnerReferences = []testOwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u"}}
	data, _ := json.Marshal(p)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out *testPod
			if err := json.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("key-check-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, changed := stripFolded(data, objectKeys); changed {
				b.Fatal("changed")
			}
		}
	})
	b.Run("decodeObject", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out *testPod
			if err := decodeObject(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecodeValidUnstructured: an Unstructured decoded by decodeValid
// (without json.Unmarshal's validity pass) is what decodeObject gives,
// and fails where that fails, for every valid JSON value.
func FuzzDecodeValidUnstructured(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"n":1.5e3,"l":[1,"2",null,true,{}]}}`,
		`{}`, `[]`, `"s"`, `12`, `true`, ` {"a":{"b":[]}} `, `{"a":1,"a":2}`, `{"\u00e9":"\ud83d\ude00"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || isNull(data) {
			return
		}
		var got, want *object.Unstructured
		errGot := decodeValid(data, &got)
		errWant := decodeObject(data, &want)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("decodeValid: %v; decodeObject: %v", errGot, errWant)
		}
		if errGot == nil && !reflect.DeepEqual(got.Object, want.Object) {
			t.Fatalf("decodeValid: %#v\ndecodeObject: %#v", got.Object, want.Object)
		}
	})
}

// TestDecodeValidUnstructuredNull: null decodes to no object, as
// decodeObject has it.
func TestDecodeValidUnstructuredNull(t *testing.T) {
	u := &object.Unstructured{Object: map[string]any{}}
	if err := decodeValid([]byte(" null "), &u); err != nil || u != nil {
		t.Fatalf("null: %v, %v", u, err)
	}
}
