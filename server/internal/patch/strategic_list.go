package patch

import (
	"fmt"
	"sort"
)

// mergeListField merges patch list p into the document's list o of field f:
// element-wise for a merge list, replacing otherwise.
func mergeListField(o, p []any, f Field) ([]any, error) {
	if !f.Merge {
		v, _, err := fromPatch(p, f.Schema)
		if err != nil {
			return nil, err
		}
		return v.([]any), nil
	}
	if len(o) == 0 && len(p) == 0 {
		return o, nil
	}
	objects, err := listOfObjects(o, p)
	if err != nil {
		return nil, err
	}
	if !objects {
		return unionPrimitives(o, p)
	}
	if f.MergeKey == "" {
		return nil, fmt.Errorf("list of objects has patch strategy merge but no merge key: %w", ErrInvalidPatch)
	}
	return mergeObjectList(o, p, f)
}

// listOfObjects reports whether the lists hold objects (true) or primitives
// (false); mixing the two, or nesting lists, has no strategic meaning.
func listOfObjects(lists ...[]any) (bool, error) {
	seenObj, seenPrim := false, false
	for _, l := range lists {
		for _, e := range l {
			switch e.(type) {
			case map[string]any:
				seenObj = true
			case []any:
				return false, fmt.Errorf("merging lists of lists is not supported: %w", ErrInvalidPatch)
			default:
				seenPrim = true
			}
		}
	}
	if seenObj && seenPrim {
		return false, fmt.Errorf("merged list mixes objects and primitives: %w", ErrInvalidPatch)
	}
	return seenObj, nil
}

// unionPrimitives is the merge of two primitive lists: each distinct value
// once, the patch's values in patch order, interleaved with the document's
// other values at their old relative positions.
func unionPrimitives(o, p []any) ([]any, error) {
	key := func(v any) (string, error) {
		k, _ := scalarKey(v)
		return k, nil
	}
	patchItems := dedupe(p, key)
	inPatch := positions(patchItems, key)
	var serverOnly []any
	for _, v := range dedupe(o, key) {
		if k, _ := key(v); !inPatch[k].found {
			serverOnly = append(serverOnly, v)
		}
	}
	return interleave(serverOnly, patchItems, positions(o, key), key), nil
}

// mergeObjectList merges a patch list of objects into the document's list,
// matching elements by f.MergeKey and honouring $patch elements.
func mergeObjectList(o, p []any, f Field) ([]any, error) {
	key := mergeKeyFunc(f.MergeKey)
	base, plain, err := splitSpecialElements(o, p, key)
	if err != nil {
		return nil, err
	}
	merged := make([]any, 0, len(base)+len(plain))
	at := make(map[string]int, len(base)+len(plain))
	for _, e := range base {
		k, err := key(e)
		if err != nil {
			return nil, err
		}
		if _, dup := at[k]; !dup {
			at[k] = len(merged)
		}
		merged = append(merged, e)
	}
	for _, pe := range plain {
		k, err := key(pe)
		if err != nil {
			return nil, err
		}
		if i, found := at[k]; found {
			m, err := mergeStrategic(merged[i].(map[string]any), pe.(map[string]any), f.Schema)
			if err != nil {
				return nil, err
			}
			merged[i] = m
			continue
		}
		v, keep, err := fromPatch(pe, f.Schema)
		if err != nil {
			return nil, err
		}
		if keep {
			at[k] = len(merged)
			merged = append(merged, v)
		}
	}
	inPatch := positions(plain, key)
	var patchItems, serverOnly []any
	for _, e := range merged {
		k, _ := key(e)
		if inPatch[k].found {
			patchItems = append(patchItems, e)
		} else {
			serverOnly = append(serverOnly, e)
		}
	}
	sortBy(patchItems, inPatch, key)
	return interleave(serverOnly, patchItems, positions(base, key), key), nil
}

// splitSpecialElements applies the $patch elements of patch list p to the
// document's list o. It returns the list to merge into (o minus deleted
// elements, or the patch's own elements after a replace) and the patch
// elements still to merge.
func splitSpecialElements(o, p []any, key func(any) (string, error)) (base, plain []any, err error) {
	deleted := map[string]bool{}
	replace := false
	for _, e := range p {
		m := e.(map[string]any) // listOfObjects checked
		d, special := m[directiveKey]
		if !special {
			plain = append(plain, e)
			continue
		}
		switch d {
		case directiveDelete:
			k, err := key(e)
			if err != nil {
				return nil, nil, err
			}
			deleted[k] = true
		case directiveRepl:
			replace = true
		case directiveMerge:
			// Merging is what the list does anyway.
		default:
			return nil, nil, fmt.Errorf("unknown %s directive %v: %w", directiveKey, d, ErrInvalidPatch)
		}
	}
	if replace {
		out := make([]any, 0, len(plain))
		for _, e := range plain {
			v, keep, err := fromPatch(e, nil)
			if err != nil {
				return nil, nil, err
			}
			if keep {
				out = append(out, v)
			}
		}
		return out, nil, nil
	}
	for _, e := range o {
		k, err := key(e)
		if err != nil {
			return nil, nil, err
		}
		if !deleted[k] {
			base = append(base, e)
		}
	}
	return base, plain, nil
}

// applySetElementOrders handles every "$setElementOrder/f" of patch together
// with the patch's list f, removing both from the patch.
func applySetElementOrders(orig, patch map[string]any, s Schema) error {
	for _, k := range sortedKeys(patch) {
		field, ok, err := directiveField(k, setOrderPfx)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		order, isList := patch[k].([]any)
		delete(patch, k)
		if !isList {
			return fmt.Errorf("%s is not a list: %w", k, ErrInvalidPatch)
		}
		if err := orderField(orig, patch, field, order, lookup(s, field)); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	return nil
}

func orderField(orig, patch map[string]any, field string, order []any, f Field) error {
	ov, hasOrig := orig[field]
	pv, hasPatch := patch[field]
	delete(patch, field)
	var o, p []any
	if hasOrig {
		var ok bool
		if o, ok = ov.([]any); !ok {
			return fmt.Errorf("document field is not a list: %w", ErrInvalidPatch)
		}
	}
	if hasPatch {
		var ok bool
		if p, ok = pv.([]any); !ok {
			return fmt.Errorf("patch field is not a list: %w", ErrInvalidPatch)
		}
	}
	key := mergeKeyFunc(f.MergeKey)
	if err := checkOrderCoversPatch(p, order, key); err != nil {
		return err
	}
	var merged []any
	var err error
	switch {
	case hasOrig && hasPatch:
		merged, err = mergeListField(o, p, f)
	case hasPatch:
		var v any
		v, _, err = fromPatch(p, f.Schema)
		merged, _ = v.([]any)
	case hasOrig:
		merged = o
	default:
		return nil
	}
	if err != nil {
		return err
	}
	inOrder := positions(order, key)
	var listed, serverOnly []any
	for _, e := range merged {
		k, err := key(e)
		if err != nil {
			return err
		}
		if inOrder[k].found {
			listed = append(listed, e)
		} else {
			serverOnly = append(serverOnly, e)
		}
	}
	sortBy(listed, inOrder, key)
	serverPos := positions(o, key)
	sortBy(serverOnly, serverPos, key)
	orig[field] = interleave(serverOnly, listed, serverPos, key)
	return nil
}

// checkOrderCoversPatch verifies that the patch list's elements (other than
// $patch elements) appear in the order list, in the same relative order.
func checkOrderCoversPatch(p, order []any, key func(any) (string, error)) error {
	j := 0
	for _, e := range p {
		if m, ok := e.(map[string]any); ok {
			if _, special := m[directiveKey]; special {
				continue
			}
		}
		k, err := key(e)
		if err != nil {
			return err
		}
		for ; j < len(order); j++ {
			ok, err := key(order[j])
			if err != nil {
				return err
			}
			if ok == k {
				break
			}
		}
		if j == len(order) {
			return fmt.Errorf("patch list does not follow %s: %w", setOrderPfx, ErrInvalidPatch)
		}
		j++
	}
	return nil
}

// mergeKeyFunc returns the identity of a list element: its merge key's value
// for objects, or the value itself for primitives.
func mergeKeyFunc(mergeKey string) func(any) (string, error) {
	if mergeKey == "" {
		return func(v any) (string, error) {
			k, ok := scalarKey(v)
			if !ok {
				return "", fmt.Errorf("list element is not a primitive and there is no merge key: %w", ErrInvalidPatch)
			}
			return k, nil
		}
	}
	return func(v any) (string, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("list element is not an object: %w", ErrInvalidPatch)
		}
		kv, ok := m[mergeKey]
		if !ok {
			return "", fmt.Errorf("list element has no merge key %q: %w", mergeKey, ErrInvalidPatch)
		}
		k, ok := scalarKey(kv)
		if !ok {
			return "", fmt.Errorf("merge key %q is not a primitive: %w", mergeKey, ErrInvalidPatch)
		}
		return k, nil
	}
}

type position struct {
	index int
	found bool
}

// positions maps each element's identity to its first index in l. Elements
// without an identity are skipped; callers that need one check it themselves.
func positions(l []any, key func(any) (string, error)) map[string]position {
	pos := make(map[string]position, len(l))
	for i, e := range l {
		k, err := key(e)
		if err != nil {
			continue
		}
		if _, seen := pos[k]; !seen {
			pos[k] = position{index: i, found: true}
		}
	}
	return pos
}

func dedupe(l []any, key func(any) (string, error)) []any {
	seen := make(map[string]bool, len(l))
	out := make([]any, 0, len(l))
	for _, e := range l {
		k, _ := key(e)
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// sortBy stably orders l by the positions in pos; elements pos does not know
// go last.
func sortBy(l []any, pos map[string]position, key func(any) (string, error)) {
	idx := func(e any) int {
		k, _ := key(e)
		if p := pos[k]; p.found {
			return p.index
		}
		return len(pos) + 1
	}
	sort.SliceStable(l, func(i, j int) bool { return idx(l[i]) < idx(l[j]) })
}

// interleave merges the document-only elements (left, in document order)
// into the patch elements (right, in patch order), keeping each side's order:
// a left element goes first only when both it and the next right element are
// in the document and it came earlier there. This is Kubernetes' rule, so
// new elements lead and existing ones keep their relative places.
func interleave(left, right []any, server map[string]position, key func(any) (string, error)) []any {
	out := make([]any, 0, len(left)+len(right))
	i, j := 0, 0
	for i < len(left) || j < len(right) {
		switch {
		case j == len(right):
			out = append(out, left[i])
			i++
		case i == len(left):
			out = append(out, right[j])
			j++
		default:
			lk, _ := key(left[i])
			rk, _ := key(right[j])
			lp, rp := server[lk], server[rk]
			if lp.found && rp.found && lp.index < rp.index {
				out = append(out, left[i])
				i++
			} else {
				out = append(out, right[j])
				j++
			}
		}
	}
	return out
}
