package patch

import "fmt"

// patchState is a document being changed by JSON patch operations. Maps are
// changed in place; an array that changes length is written back into its
// parent, which is why operations go through root rather than holding
// sub-values.
type patchState struct {
	root       any
	copyBudget int // bytes "copy" may still duplicate; see MaxCopyBytes
}

func (s *patchState) apply(op operation) error {
	switch op.op {
	case "add":
		return s.add(op.path, op.value)
	case "remove":
		_, err := s.remove(op.path)
		return err
	case "replace":
		if _, err := s.get(op.path); err != nil {
			return err
		}
		return s.set(op.path, op.value)
	case "move":
		if op.from.String() == op.path.String() {
			_, err := s.get(op.from)
			return err
		}
		v, err := s.remove(op.from)
		if err != nil {
			return err
		}
		return s.add(op.path, v)
	case "copy":
		v, err := s.get(op.from)
		if err != nil {
			return err
		}
		c, err := copyWithin(v, &s.copyBudget, MaxDepth)
		if err != nil {
			return err
		}
		return s.add(op.path, c)
	case "test":
		v, err := s.get(op.path)
		if err != nil {
			return err
		}
		if !equalJSON(v, op.value) {
			return fmt.Errorf("value at %s differs: %w: %w", op.path, ErrTestFailed, ErrConflict)
		}
		return nil
	}
	return fmt.Errorf("unknown operation %q: %w", op.op, ErrInvalidPatch)
}

// get returns the value p names, which must exist. It walks iteratively, so
// a document made deep by earlier operations costs no stack.
func (s *patchState) get(p pointer) (any, error) {
	cur := s.root
	for i, tok := range p {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("path %s does not exist: %w", p[:i+1], ErrConflict)
			}
			cur = v
		case []any:
			if tok == "-" {
				return nil, fmt.Errorf("path %s names no element: %w", p[:i+1], ErrConflict)
			}
			idx, err := arrayIndex(tok, len(c)-1)
			if err != nil {
				return nil, err
			}
			cur = c[idx]
		default:
			return nil, fmt.Errorf("path %s goes through a scalar: %w", p[:i+1], ErrConflict)
		}
	}
	return cur, nil
}

// set stores v at p, whose parent must exist; an array parent keeps its
// length, so set never needs to write further up.
func (s *patchState) set(p pointer, v any) error {
	if len(p) == 0 {
		s.root = v
		return nil
	}
	parent, err := s.get(p[:len(p)-1])
	if err != nil {
		return err
	}
	last := p[len(p)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = v
	case []any:
		idx, err := arrayIndex(last, len(c)-1)
		if err != nil {
			return err
		}
		c[idx] = v
	default:
		return fmt.Errorf("parent of %s is a scalar: %w", p, ErrConflict)
	}
	return nil
}

// add implements RFC 6902 "add": set an object member (replacing any), or
// insert into an array at an index in [0, len] or at "-" (the end).
func (s *patchState) add(p pointer, v any) error {
	if len(p) == 0 {
		s.root = v
		return nil
	}
	parent, err := s.get(p[:len(p)-1])
	if err != nil {
		return err
	}
	last := p[len(p)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = v
		return nil
	case []any:
		idx := len(c)
		if last != "-" {
			if idx, err = arrayIndex(last, len(c)); err != nil {
				return err
			}
		}
		grown := make([]any, 0, len(c)+1)
		grown = append(grown, c[:idx]...)
		grown = append(grown, v)
		grown = append(grown, c[idx:]...)
		return s.set(p[:len(p)-1], grown)
	default:
		return fmt.Errorf("parent of %s is a scalar: %w", p, ErrConflict)
	}
}

// remove deletes the value at p, which must exist, and returns it.
func (s *patchState) remove(p pointer) (any, error) {
	if len(p) == 0 {
		return nil, fmt.Errorf("cannot remove the whole document: %w", ErrConflict)
	}
	parent, err := s.get(p[:len(p)-1])
	if err != nil {
		return nil, err
	}
	last := p[len(p)-1]
	switch c := parent.(type) {
	case map[string]any:
		v, ok := c[last]
		if !ok {
			return nil, fmt.Errorf("path %s does not exist: %w", p, ErrConflict)
		}
		delete(c, last)
		return v, nil
	case []any:
		if last == "-" {
			return nil, fmt.Errorf("path %s names no element: %w", p, ErrConflict)
		}
		idx, err := arrayIndex(last, len(c)-1)
		if err != nil {
			return nil, err
		}
		v := c[idx]
		shrunk := make([]any, 0, len(c)-1)
		shrunk = append(shrunk, c[:idx]...)
		shrunk = append(shrunk, c[idx+1:]...)
		return v, s.set(p[:len(p)-1], shrunk)
	default:
		return nil, fmt.Errorf("parent of %s is a scalar: %w", p, ErrConflict)
	}
}

// copyWithin deep-copies v, charging an approximate encoded size to budget and
// failing once it is spent or v nests deeper than depth. Strings are shared:
// they are immutable, but their length is still charged, because the result
// will be encoded with every copy.
func copyWithin(v any, budget *int, depth int) (any, error) {
	const nodeCost = 8
	*budget -= nodeCost
	switch t := v.(type) {
	case map[string]any:
		if depth == 0 {
			return nil, fmt.Errorf("%w: %w", tooDeep("copied value nests"), ErrInvalidPatch)
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			*budget -= len(k)
			c, err := copyWithin(e, budget, depth-1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, checkBudget(*budget)
	case []any:
		if depth == 0 {
			return nil, fmt.Errorf("%w: %w", tooDeep("copied value nests"), ErrInvalidPatch)
		}
		out := make([]any, len(t))
		for i, e := range t {
			c, err := copyWithin(e, budget, depth-1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, checkBudget(*budget)
	case string:
		*budget -= len(t)
	}
	return v, checkBudget(*budget)
}

func checkBudget(b int) error {
	if b < 0 {
		return fmt.Errorf("copy operations duplicate more than %d bytes: %w", MaxCopyBytes, ErrInvalidPatch)
	}
	return nil
}
