package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSONPatch applies an RFC 6902 JSON patch to doc, a JSON object.
//
// The patch is an array of operations (add, remove, replace, move, copy,
// test) applied in order; if any fails, none takes effect. Paths are RFC 6901
// pointers ("~1" is '/', "~0" is '~'); "-" as the last token of an add path
// appends to an array. Members of an operation other than op, path, from and
// value are ignored, as RFC 6902 requires.
//
// A malformed patch (not an array of operations, an unknown op, a missing
// member, a bad pointer, more than MaxOperations operations, copies beyond
// MaxCopyBytes) wraps ErrInvalidPatch. A well-formed patch that does not fit
// the document (a missing path, an index out of range) wraps ErrConflict, and
// a failed test wraps ErrTestFailed and ErrConflict. The result must still be
// a JSON object; replacing the whole document with anything else wraps
// ErrConflict.
func JSONPatch(doc, p []byte) ([]byte, error) {
	target, err := decodeDoc(doc)
	if err != nil {
		return nil, err
	}
	ops, err := decodeOperations(p)
	if err != nil {
		return nil, err
	}
	st := patchState{root: target, copyBudget: MaxCopyBytes}
	for i, op := range ops {
		if err := st.apply(op); err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %w", i, op.op, op.path, err)
		}
	}
	if _, ok := st.root.(map[string]any); !ok {
		return nil, fmt.Errorf("result is not a JSON object: %w", ErrConflict)
	}
	return encodeJSON(st.root)
}

// operation is one decoded RFC 6902 operation.
type operation struct {
	op    string
	path  pointer
	from  pointer // move and copy only
	value any     // add, replace and test only; may be nil (JSON null)
}

// decodeOperations decodes the patch one operation at a time, so a patch with
// a million operations is refused after MaxOperations+1 of them rather than
// after reading them all. Each operation is depth-checked on its own.
func decodeOperations(p []byte) ([]operation, error) {
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("JSON patch is not valid JSON: %v: %w", err, ErrInvalidPatch)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("JSON patch is not an array: %w", ErrInvalidPatch)
	}
	var ops []operation
	for dec.More() {
		if len(ops) == MaxOperations {
			return nil, fmt.Errorf("more than %d operations: %w: %w", MaxOperations, ErrTooManyOperations, ErrInvalidPatch)
		}
		var text json.RawMessage
		if err := dec.Decode(&text); err != nil {
			return nil, fmt.Errorf("JSON patch is not valid JSON: %v: %w", err, ErrInvalidPatch)
		}
		raw, err := decodeJSON(text, "JSON patch operation", ErrInvalidPatch)
		if err != nil {
			return nil, err
		}
		op, err := parseOperation(raw)
		if err != nil {
			return nil, fmt.Errorf("operation %d: %w", len(ops), err)
		}
		ops = append(ops, op)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, fmt.Errorf("JSON patch is not valid JSON: %v: %w", err, ErrInvalidPatch)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("JSON patch has data after the array: %w", ErrInvalidPatch)
	}
	return ops, nil
}

func parseOperation(raw any) (operation, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return operation{}, fmt.Errorf("operation is not an object: %w", ErrInvalidPatch)
	}
	var op operation
	var err error
	if op.op, err = stringMember(m, "op"); err != nil {
		return operation{}, err
	}
	path, err := stringMember(m, "path")
	if err != nil {
		return operation{}, err
	}
	if op.path, err = parsePointer(path); err != nil {
		return operation{}, err
	}
	switch op.op {
	case "add", "replace", "test":
		v, ok := m["value"]
		if !ok {
			return operation{}, fmt.Errorf("%q operation has no value: %w", op.op, ErrInvalidPatch)
		}
		op.value = v
	case "move", "copy":
		from, err := stringMember(m, "from")
		if err != nil {
			return operation{}, err
		}
		if op.from, err = parsePointer(from); err != nil {
			return operation{}, err
		}
		if op.op == "move" && op.from.isProperPrefixOf(op.path) {
			return operation{}, fmt.Errorf("cannot move %s into its own child %s: %w", op.from, op.path, ErrInvalidPatch)
		}
	case "remove":
	default:
		return operation{}, fmt.Errorf("unknown operation %q: %w", op.op, ErrInvalidPatch)
	}
	return op, nil
}

func stringMember(m map[string]any, name string) (string, error) {
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("operation has no %q member: %w", name, ErrInvalidPatch)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("operation member %q is not a string: %w", name, ErrInvalidPatch)
	}
	return s, nil
}
