package patch

import "fmt"

// MergePatch applies an RFC 7386 JSON merge patch to doc, a JSON object.
//
// The patch must be a JSON object: members with null values delete, objects
// merge recursively, anything else (arrays included) replaces. RFC 7386 also
// allows a non-object patch that replaces the whole document; the result
// would not be an API object, so MergePatch rejects it with ErrInvalidPatch.
//
// Merge patches are idempotent: applying one twice gives the same result as
// applying it once.
func MergePatch(doc, p []byte) ([]byte, error) {
	target, err := decodeDoc(doc)
	if err != nil {
		return nil, err
	}
	pv, err := decodeJSON(p, "merge patch", ErrInvalidPatch)
	if err != nil {
		return nil, err
	}
	patch, ok := pv.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("merge patch is not a JSON object: %w", ErrInvalidPatch)
	}
	return encodeJSON(mergeObject(target, patch))
}

// mergeObject is RFC 7386 MergePatch for an object patch. It updates target in
// place and returns it. Recursion follows the patch, whose depth is bounded.
func mergeObject(target, patch map[string]any) map[string]any {
	for k, pv := range patch {
		switch pv := pv.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			sub, ok := target[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
			}
			target[k] = mergeObject(sub, pv)
		default:
			target[k] = pv
		}
	}
	return target
}
