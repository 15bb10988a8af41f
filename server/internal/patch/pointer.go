package patch

import (
	"fmt"
	"strconv"
	"strings"
)

// pointer is a parsed RFC 6901 JSON pointer: the unescaped reference tokens.
// The empty pointer (no tokens) names the whole document.
type pointer []string

// parsePointer parses s. "~1" decodes to '/' and "~0" to '~', in that order of
// precedence so "~01" is "~1"; any other '~' sequence is malformed.
func parsePointer(s string) (pointer, error) {
	if s == "" {
		return pointer{}, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q does not start with '/': %w", s, ErrInvalidPatch)
	}
	parts := strings.Split(s[1:], "/")
	for i, part := range parts {
		if !strings.Contains(part, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(part); j++ {
			if part[j] != '~' {
				b.WriteByte(part[j])
				continue
			}
			if j+1 == len(part) || (part[j+1] != '0' && part[j+1] != '1') {
				return nil, fmt.Errorf("JSON pointer %q has a bad escape: %w", s, ErrInvalidPatch)
			}
			if part[j+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			j++
		}
		parts[i] = b.String()
	}
	return pointer(parts), nil
}

// String renders p back in RFC 6901 syntax, for error messages.
func (p pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// isProperPrefixOf reports whether p names a strict ancestor of q.
func (p pointer) isProperPrefixOf(q pointer) bool {
	if len(p) >= len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// arrayIndex parses an array reference token: decimal, no leading zeros, no
// sign. RFC 6901 allows nothing else ("-" is handled by the callers that
// accept it). n bounds the valid range [0, n].
func arrayIndex(tok string, n int) (int, error) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') || tok[0] == '+' || tok[0] == '-' {
		return 0, fmt.Errorf("array index %q is not a valid index: %w", tok, ErrConflict)
	}
	i, err := strconv.Atoi(tok)
	if err != nil {
		return 0, fmt.Errorf("array index %q is not a valid index: %w", tok, ErrConflict)
	}
	if i > n {
		return 0, fmt.Errorf("array index %d out of range (length %d): %w", i, n, ErrConflict)
	}
	return i, nil
}
