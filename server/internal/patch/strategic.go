package patch

import (
	"fmt"
	"sort"
	"strings"
)

// Strategic merge patch directives, as kubectl and client-go write them.
const (
	directiveKey    = "$patch"
	retainKeysKey   = "$retainKeys"
	deleteFromPfx   = "$deleteFromPrimitiveList"
	setOrderPfx     = "$setElementOrder"
	directiveDelete = "delete"
	directiveMerge  = "merge"
	directiveRepl   = "replace"
)

// StrategicMergePatch applies a Kubernetes strategic merge patch to doc, a
// JSON object, using schema for merge keys and list strategies. A nil schema
// knows no field: every list is replaced, as in a JSON merge patch, but the
// directives still work.
//
// On top of merge patch semantics (objects merge, null deletes):
//   - a list whose field has Merge set merges element-wise: objects by their
//     MergeKey (merged recursively, new ones added), primitives by union;
//     other lists are replaced;
//   - {"$patch": "replace"} in an object replaces the object with the rest of
//     the patch object; {"$patch": "delete"} empties it (Kubernetes leaves
//     {}), or removes it when the document does not have it; "merge" is the
//     default and merges;
//   - in a merged list of objects, an element {"$patch": "delete", key: v}
//     deletes the elements whose key is v, and an element
//     {"$patch": "replace"} makes the other patch elements replace the list;
//   - "$retainKeys": [...] clears every field of the object not listed, and
//     the patch may set only listed fields;
//   - "$deleteFromPrimitiveList/f": [...] removes those values from list f;
//   - "$setElementOrder/f": [...] orders list f: listed elements (by merge
//     key, or by value for primitives) come in that order, and the elements
//     only the document has keep their place relative to them.
//
// The result never contains a directive key. See the package documentation
// for the deliberate differences from k8s.io/apimachinery's implementation.
func StrategicMergePatch(doc, p []byte, schema Schema) ([]byte, error) {
	target, err := decodeDoc(doc)
	if err != nil {
		return nil, err
	}
	pv, err := decodeJSON(p, "strategic merge patch", ErrInvalidPatch)
	if err != nil {
		return nil, err
	}
	patch, ok := pv.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("strategic merge patch is not a JSON object: %w", ErrInvalidPatch)
	}
	out, err := mergeStrategic(target, patch, schema)
	if err != nil {
		return nil, err
	}
	return encodeJSON(out)
}

// mergeStrategic merges patch into orig (nil means absent) and returns the
// result. It may change orig and patch in place. Recursion follows patch,
// whose depth decodeJSON bounded.
func mergeStrategic(orig, patch map[string]any, s Schema) (map[string]any, error) {
	if d, ok := patch[directiveKey]; ok {
		delete(patch, directiveKey)
		switch d {
		case directiveRepl:
			orig = nil // what remains of the patch is the whole object
		case directiveDelete:
			return map[string]any{}, nil
		case directiveMerge:
		default:
			return nil, fmt.Errorf("unknown %s directive %v: %w", directiveKey, d, ErrInvalidPatch)
		}
	}
	if orig == nil {
		orig = map[string]any{}
	}
	if err := applyRetainKeys(orig, patch); err != nil {
		return nil, err
	}
	// Deletions from primitive lists go first, so that a value both deleted
	// and listed in the patch ends up present. Kubernetes' order depends on
	// map iteration here; kubectl never sends such a patch.
	if err := applyDeleteFromPrimitiveLists(orig, patch); err != nil {
		return nil, err
	}
	if err := applySetElementOrders(orig, patch, s); err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(patch) {
		if err := mergeField(orig, k, patch[k], lookup(s, k)); err != nil {
			return nil, err
		}
	}
	return orig, nil
}

// mergeField merges the patch value pv of field k into orig.
func mergeField(orig map[string]any, k string, pv any, f Field) error {
	if pv == nil {
		delete(orig, k)
		return nil
	}
	ov, has := orig[k]
	var merged any
	var err error
	keep := true
	switch p := pv.(type) {
	case map[string]any:
		if o, ok := ov.(map[string]any); ok && has && !f.Replace {
			merged, err = mergeStrategic(o, p, f.Schema)
		} else {
			merged, keep, err = fromPatch(p, f.Schema)
		}
	case []any:
		if o, ok := ov.([]any); ok && has {
			merged, err = mergeListField(o, p, f)
		} else {
			merged, keep, err = fromPatch(p, f.Schema)
		}
	default:
		merged = pv
	}
	if err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	if keep {
		orig[k] = merged
	} else {
		delete(orig, k)
	}
	return nil
}

// fromPatch is the value a patch value gives where the document has nothing:
// directives are applied to emptiness, so none survives, nulls inside objects
// are dropped, and keep is false for an object that deletes itself.
func fromPatch(pv any, s Schema) (v any, keep bool, err error) {
	switch p := pv.(type) {
	case map[string]any:
		if p[directiveKey] == directiveDelete {
			return nil, false, nil
		}
		m, err := mergeStrategic(nil, p, s)
		return m, err == nil, err
	case []any:
		out := make([]any, 0, len(p))
		for _, e := range p {
			if em, ok := e.(map[string]any); ok {
				if _, isDirective := em[directiveKey]; isDirective {
					continue
				}
			}
			ev, keep, err := fromPatch(e, s)
			if err != nil {
				return nil, false, err
			}
			if keep {
				out = append(out, ev)
			}
		}
		return out, true, nil
	default:
		return pv, true, nil
	}
}

// applyRetainKeys handles "$retainKeys": the patch may only set listed
// fields, and the document loses every field not listed.
func applyRetainKeys(orig, patch map[string]any) error {
	rk, ok := patch[retainKeysKey]
	if !ok {
		return nil
	}
	delete(patch, retainKeysKey)
	list, ok := rk.([]any)
	if !ok {
		return fmt.Errorf("%s is not a list: %w", retainKeysKey, ErrInvalidPatch)
	}
	retain := make(map[string]bool, len(list))
	for _, e := range list {
		name, ok := e.(string)
		if !ok {
			return fmt.Errorf("%s holds a non-string: %w", retainKeysKey, ErrInvalidPatch)
		}
		retain[name] = true
	}
	for k, v := range patch {
		if v == nil || strings.HasPrefix(k, deleteFromPfx) || strings.HasPrefix(k, setOrderPfx) {
			continue
		}
		if !retain[k] {
			return fmt.Errorf("field %q is set but not in %s: %w", k, retainKeysKey, ErrInvalidPatch)
		}
	}
	for k := range orig {
		if !retain[k] {
			delete(orig, k)
		}
	}
	return nil
}

// directiveField returns the field a "$prefix/field" key names, ok false for
// keys that are not such a directive, and an error for a malformed one.
func directiveField(key, prefix string) (field string, ok bool, err error) {
	if !strings.HasPrefix(key, prefix) {
		return "", false, nil
	}
	rest, found := strings.CutPrefix(key[len(prefix):], "/")
	if !found || rest == "" {
		return "", false, fmt.Errorf("malformed directive %q: %w", key, ErrInvalidPatch)
	}
	return rest, true, nil
}

// applyDeleteFromPrimitiveLists handles "$deleteFromPrimitiveList/f": every
// listed value is removed from the document's list f. A missing list, or a
// field that is not a list, is left alone.
func applyDeleteFromPrimitiveLists(orig, patch map[string]any) error {
	for _, k := range sortedKeys(patch) {
		field, ok, err := directiveField(k, deleteFromPfx)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		toDelete, isList := patch[k].([]any)
		delete(patch, k)
		if !isList {
			return fmt.Errorf("%s is not a list: %w", k, ErrInvalidPatch)
		}
		gone := make(map[string]bool, len(toDelete))
		for _, v := range toDelete {
			key, ok := scalarKey(v)
			if !ok {
				return fmt.Errorf("%s holds a non-primitive: %w", k, ErrInvalidPatch)
			}
			gone[key] = true
		}
		list, ok := orig[field].([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, v := range list {
			if key, ok := scalarKey(v); !ok || !gone[key] {
				kept = append(kept, v)
			}
		}
		orig[field] = kept
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
