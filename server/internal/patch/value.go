package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
)

// Decoded JSON in this package is the encoding/json generic form with
// UseNumber: map[string]any, []any, string, json.Number, bool and nil.
// json.Number keeps a number's original text, so 10000000000000001 leaves
// exactly as it came in; nothing here converts numbers to float64.

// decodeJSON decodes one JSON value, refusing input nested deeper than
// MaxDepth and trailing data. Errors wrap sentinel.
func decodeJSON(data []byte, what string, sentinel error) (any, error) {
	if err := checkDepth(data); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", what, err, sentinel)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %v: %w", what, err, sentinel)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s has data after the JSON value: %w", what, sentinel)
	}
	return v, nil
}

// decodeDoc decodes the document being patched, which must be an object.
func decodeDoc(doc []byte) (map[string]any, error) {
	v, err := decodeJSON(doc, "document", ErrInvalidDocument)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ErrInvalidDocument
	}
	return m, nil
}

// encodeJSON renders a decoded value. HTML escaping is off: the output is an
// API object, not a web page, and '<' should stay '<'.
func encodeJSON(v any) ([]byte, error) {
	if depthExceeds(v, MaxDepth) {
		return nil, fmt.Errorf("%w: %w", tooDeep("result nests"), ErrInvalidPatch)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a value that did not come from the decoder could fail here.
		return nil, fmt.Errorf("encoding result: %v: %w", err, ErrInvalidPatch)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// depthExceeds reports whether v nests deeper than limit. It stops descending
// at the limit, so its own recursion is bounded whatever v holds.
func depthExceeds(v any, limit int) bool {
	switch t := v.(type) {
	case map[string]any:
		if limit == 0 {
			return true
		}
		for _, e := range t {
			if depthExceeds(e, limit-1) {
				return true
			}
		}
	case []any:
		if limit == 0 {
			return true
		}
		for _, e := range t {
			if depthExceeds(e, limit-1) {
				return true
			}
		}
	}
	return false
}

// equalJSON is JSON value equality as RFC 6902 "test" defines it: numbers
// compare by value, objects ignore member order, arrays compare in order.
// Recursion ends at the shallower side, and patch values are depth-checked.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalJSON(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numberKey(x) == numberKey(y)
	default:
		return a == b
	}
}

// numberKey is a canonical text for a number, so that 1, 1.0 and 1e0 are one
// value (kube compares merge keys as float64, where they are equal too). It
// uses 256-bit precision, so integers up to 77 digits keep their identity.
func numberKey(n json.Number) string {
	f, _, err := big.ParseFloat(string(n), 10, 256, big.ToNearestEven)
	if err != nil {
		return string(n)
	}
	return f.Text('g', -1)
}

// scalarKey returns a map key identifying a scalar by type and value, and
// false for objects and arrays. It lets list merging index elements instead of
// scanning, keeping strategic merge linear in the size of its lists.
func scalarKey(v any) (string, bool) {
	switch t := v.(type) {
	case nil:
		return "null", true
	case bool:
		if t {
			return "true", true
		}
		return "false", true
	case string:
		return "s" + t, true
	case json.Number:
		return "n" + numberKey(t), true
	default:
		return "", false
	}
}
