package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// readJSONListAll runs readJSONList over data, at once or a byte at a
// time, and returns the items as JSON.
func readJSONListAll[T object.Object](data []byte, oneByte bool) (wire.ListMeta, []string, error) {
	var r = any(bytes.NewReader(data)).(interface{ Read([]byte) (int, error) })
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	var items []string
	lm, err := readJSONList(r, func(item T) error {
		b, err := json.Marshal(item)
		items = append(items, string(b))
		return err
	})
	return lm, items, err
}

// wholeJSONList decodes data as List does, and returns the items as JSON.
func wholeJSONList[T object.Object](data []byte) (wire.ListMeta, []string, error) {
	raw, err := readValue(bytes.NewReader(data))
	if err != nil {
		return wire.ListMeta{}, nil, err
	}
	var list wire.List[T]
	if err := decodeList[T](raw, &list); err != nil {
		return wire.ListMeta{}, nil, err
	}
	var items []string
	for _, item := range list.Items {
		b, err := json.Marshal(item)
		if err != nil {
			return wire.ListMeta{}, nil, err
		}
		items = append(items, string(b))
	}
	return list.Metadata, items, nil
}

// FuzzReadJSONList: reading a typed list as it arrives gives what decoding
// it whole gives, read at once or a byte at a time, and fails only where
// that fails, where the list has more than one items key, or where an
// item is null.
func FuzzReadJSONList(f *testing.F) {
	for _, s := range []string{
		`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5","continue":"c"},"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"3"}},{"metadata":{"name":"b"}}]}`,
		`{"items":null,"metadata":{"remainingItemCount":3}}`,
		`null`,
		`{"metadata":{"continue":"a"},"metadata":{"resourceVersion":"1"}}`,
		`{"Items":[{"metadata":{"name":"x"}}],"items":[],"METADATA":{"continue":"z"}}`,
		`{"items":[{"metadata":{"name":"a","Name":"b"}}]}`,
		`{"items":[{}],"items":[{}]}`,
		`{"items":{}}`,
		`{"items":[null]}`,
		`[]`,
		`{"items":[{"metadata":5}]}`,
		`  {"items":[]}  trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		wantMeta, want, wantErr := wholeJSONList[*testPod](data)
		// Malformed JSON is refused by either, or both, depending on
		// where it is (decodeList takes out mis-spelt keys, and any
		// malformed value they hold, before json.Unmarshal sees them):
		// only well-formed values are compared.
		raw, _ := readValue(bytes.NewReader(data))
		valid := json.Valid(raw)
		for _, oneByte := range []bool{false, true} {
			meta, got, err := readJSONListAll[*testPod](data, oneByte)
			switch {
			case !valid:
			case err != nil && wantErr == nil && !errors.Is(err, errRepeatedItems) && !errors.Is(err, errNullItem):
				t.Fatalf("one byte %v: %v; whole: %d items", oneByte, err, len(want))
			case err != nil && wantErr == nil:
				// refused: a repeated items key, or a null item
			case err == nil && wantErr != nil:
				t.Fatalf("one byte %v: read %d items; whole: %v", oneByte, len(got), wantErr)
			case err == nil && (!reflect.DeepEqual(meta, wantMeta) || !reflect.DeepEqual(got, want)):
				t.Fatalf("one byte %v:\n%+v %q\nwhole:\n%+v %q", oneByte, meta, got, wantMeta, want)
			}
		}
		// Unstructured: no panic, and what decodes decodes alike either way.
		_, a, errA := readJSONListAll[*object.Unstructured](data, false)
		_, b, errB := readJSONListAll[*object.Unstructured](data, true)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("unstructured: at once %v %q, a byte at a time %v %q", errA, a, errB, b)
		}
	})
}

// TestUnstructuredListItemsInheritType: an Unstructured item without
// apiVersion and kind (a typed List's, from kube-apiserver) gets its
// list's, kind without "List", as client-go's UnstructuredList gives
// them; an item with its own keeps them, and typed items are left alone.
func TestUnstructuredListItemsInheritType(t *testing.T) {
	data := []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"}},{"apiVersion":"x/v1","kind":"Other","metadata":{"name":"b"}}]}`)
	want := []string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, `{"apiVersion":"x/v1","kind":"Other","metadata":{"name":"b"}}`}
	for _, oneByte := range []bool{false, true} {
		_, got, err := readJSONListAll[*object.Unstructured](data, oneByte)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("read (one byte %v): %q %v, want %q", oneByte, got, err, want)
		}
	}
	var list wire.List[*object.Unstructured]
	if err := decodeList[*object.Unstructured](data, &list); err != nil {
		t.Fatal(err)
	}
	for i, item := range list.Items {
		inheritListType(item, list.TypeMeta)
		if b, _ := json.Marshal(item); string(b) != want[i] {
			t.Fatalf("item %d: %s, want %s", i, b, want[i])
		}
	}
	_, typed, err := readJSONListAll[*testPod](data, false)
	if err != nil || strings.Contains(typed[0], "ConfigMap") {
		t.Fatalf("typed item given its list's kind: %q %v", typed, err)
	}
}
