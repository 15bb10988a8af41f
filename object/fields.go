package object

import (
	"fmt"
	"slices"
	"strings"
)

// FieldRequirement is one term of a field selector: field = value or
// field != value.
type FieldRequirement struct {
	Field string
	Value string
	Not   bool // true for !=
}

// FieldSelector is a parsed field selector: a conjunction of terms. The zero
// value selects everything.
type FieldSelector struct {
	reqs []FieldRequirement
}

// Empty reports whether the selector selects everything.
func (s FieldSelector) Empty() bool { return len(s.reqs) == 0 }

// Requirements returns the parsed terms, sorted by field.
func (s FieldSelector) Requirements() []FieldRequirement { return slices.Clone(s.reqs) }

// Fields reports the fields the selector names, so a server can refuse
// fields it does not index.
func (s FieldSelector) Fields() []string {
	out := make([]string, 0, len(s.reqs))
	for _, r := range s.reqs {
		out = append(out, r.Field)
	}
	return slices.Compact(out)
}

// RequiresExactMatch returns the value a field must equal, if the selector
// pins it with "=". Servers use it to narrow a range read, e.g. to one
// namespace or one name.
func (s FieldSelector) RequiresExactMatch(field string) (string, bool) {
	for _, r := range s.reqs {
		if r.Field == field && !r.Not {
			return r.Value, true
		}
	}
	return "", false
}

// Matches reports whether the fields satisfy every term. get returns a
// field's value and whether the object has that field; a missing field
// compares as the empty string, as in Kubernetes.
func (s FieldSelector) Matches(get func(field string) string) bool {
	for _, r := range s.reqs {
		if (get(r.Field) == r.Value) == r.Not {
			return false
		}
	}
	return true
}

// MatchesSet is Matches over a map of field values.
func (s FieldSelector) MatchesSet(fields map[string]string) bool {
	return s.Matches(func(f string) string { return fields[f] })
}

// String returns the canonical text form, escaped so that it parses back.
func (s FieldSelector) String() string {
	parts := make([]string, len(s.reqs))
	for i, r := range s.reqs {
		op := "="
		if r.Not {
			op = "!="
		}
		parts[i] = escapeField(r.Field) + op + escapeField(r.Value)
	}
	return strings.Join(parts, ",")
}

// FieldSelectorFromSet returns the selector requiring each field to equal its value.
func FieldSelectorFromSet(set map[string]string) FieldSelector {
	var s FieldSelector
	for k, v := range set {
		s.reqs = append(s.reqs, FieldRequirement{Field: k, Value: v})
	}
	sortFieldRequirements(s.reqs)
	return s
}

var fieldEscaper = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `=`, `\=`, `!`, `\!`)

func escapeField(s string) string { return fieldEscaper.Replace(s) }

// ParseFieldSelector parses Kubernetes' field selector syntax:
// "f1=v1,f2==v2,f3!=v3". A backslash escapes ',', '=', '!' and '\' in a
// field or value.
func ParseFieldSelector(s string) (FieldSelector, error) {
	var out FieldSelector
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	terms, err := splitUnescaped(s)
	if err != nil {
		return FieldSelector{}, fmt.Errorf("%w: %q: %w", ErrInvalidSelector, s, err)
	}
	for _, term := range terms {
		r, err := parseFieldTerm(term)
		if err != nil {
			return FieldSelector{}, fmt.Errorf("%w: %q: %w", ErrInvalidSelector, s, err)
		}
		out.reqs = append(out.reqs, r)
	}
	sortFieldRequirements(out.reqs)
	return out, nil
}

func sortFieldRequirements(reqs []FieldRequirement) {
	slices.SortStableFunc(reqs, func(a, b FieldRequirement) int { return strings.Compare(a.Field, b.Field) })
}

// splitUnescaped splits on commas that are not escaped; escapes are kept.
func splitUnescaped(s string) ([]string, error) {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
			if i == len(s) {
				return nil, fmt.Errorf("trailing backslash")
			}
		case ',':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:]), nil
}

func parseFieldTerm(term string) (FieldRequirement, error) {
	var field strings.Builder
	for i := 0; i < len(term); i++ {
		c := term[i]
		if c == '\\' {
			i++
			if i == len(term) {
				return FieldRequirement{}, fmt.Errorf("trailing backslash")
			}
			field.WriteByte(term[i])
			continue
		}
		var op string
		switch {
		case strings.HasPrefix(term[i:], "!="):
			op = "!="
		case strings.HasPrefix(term[i:], "=="):
			op = "=="
		case c == '=':
			op = "="
		}
		if op == "" {
			field.WriteByte(c)
			continue
		}
		value, err := unescapeField(term[i+len(op):])
		if err != nil {
			return FieldRequirement{}, err
		}
		f := strings.TrimSpace(field.String())
		if f == "" {
			return FieldRequirement{}, fmt.Errorf("term %q has no field", term)
		}
		return FieldRequirement{Field: f, Value: value, Not: op == "!="}, nil
	}
	return FieldRequirement{}, fmt.Errorf("term %q has no operator", term)
}

func unescapeField(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			i++
			if i == len(s) {
				return "", fmt.Errorf("trailing backslash")
			}
			b.WriteByte(s[i])
		case '=':
			return "", fmt.Errorf("unescaped '=' in value %q", s)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
