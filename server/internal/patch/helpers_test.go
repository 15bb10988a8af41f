package patch

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// mustDecode decodes JSON with UseNumber, the form this package works in.
func mustDecode(t testing.TB, s []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return v
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	return reflect.DeepEqual(mustDecode(t, a), mustDecode(t, b))
}
