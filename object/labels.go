package object

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalidSelector wraps every label and field selector parse error.
var ErrInvalidSelector = errors.New("object: invalid selector")

// Operator is a label selector requirement's operator.
type Operator string

const (
	OpEquals       Operator = "="
	OpDoubleEquals Operator = "=="
	OpNotEquals    Operator = "!="
	OpIn           Operator = "in"
	OpNotIn        Operator = "notin"
	OpExists       Operator = "exists"
	OpDoesNotExist Operator = "!"
	OpGreaterThan  Operator = "gt"
	OpLessThan     Operator = "lt"
)

// Requirement is one comma-separated term of a label selector.
type Requirement struct {
	Key      string
	Operator Operator
	Values   []string // sorted; one value for =, ==, !=, gt, lt
}

// LabelSelector is a parsed label selector: a conjunction of requirements.
// The zero value selects everything.
type LabelSelector struct {
	reqs []Requirement
}

// Empty reports whether the selector selects everything.
func (s LabelSelector) Empty() bool { return len(s.reqs) == 0 }

// Requirements returns the parsed terms in their canonical order.
func (s LabelSelector) Requirements() []Requirement { return slices.Clone(s.reqs) }

// Matches reports whether labels satisfy every requirement.
func (s LabelSelector) Matches(labels map[string]string) bool {
	for _, r := range s.reqs {
		if !r.Matches(labels) {
			return false
		}
	}
	return true
}

// MatchesFunc is Matches over labels held in another form: get returns a
// label's value and whether the object has that label.
func (s LabelSelector) MatchesFunc(get func(key string) (string, bool)) bool {
	for _, r := range s.reqs {
		v, ok := get(r.Key)
		if !r.matchesValue(v, ok) {
			return false
		}
	}
	return true
}

// Matches reports whether labels satisfy r.
func (r Requirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	return r.matchesValue(v, ok)
}

// matchesValue reports whether a label of value v, present when ok,
// satisfies r.
func (r Requirement) matchesValue(v string, ok bool) bool {
	switch r.Operator {
	case OpEquals, OpDoubleEquals, OpIn:
		return ok && slices.Contains(r.Values, v)
	case OpNotEquals, OpNotIn:
		return !ok || !slices.Contains(r.Values, v)
	case OpExists:
		return ok
	case OpDoesNotExist:
		return !ok
	case OpGreaterThan, OpLessThan:
		if !ok {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == OpGreaterThan {
			return have > want
		}
		return have < want
	}
	return false
}

// String returns the canonical text form, which parses back to an equal selector.
func (s LabelSelector) String() string {
	parts := make([]string, len(s.reqs))
	for i, r := range s.reqs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

func (r Requirement) String() string {
	switch r.Operator {
	case OpExists:
		return r.Key
	case OpDoesNotExist:
		return "!" + r.Key
	case OpIn, OpNotIn:
		return r.Key + " " + string(r.Operator) + " (" + strings.Join(r.Values, ",") + ")"
	case OpGreaterThan:
		return r.Key + ">" + r.Values[0]
	case OpLessThan:
		return r.Key + "<" + r.Values[0]
	}
	return r.Key + string(r.Operator) + r.Values[0]
}

// SelectorFromSet returns the selector that matches labels equal to set.
func SelectorFromSet(set map[string]string) LabelSelector {
	var s LabelSelector
	for k, v := range set {
		s.reqs = append(s.reqs, Requirement{Key: k, Operator: OpEquals, Values: []string{v}})
	}
	sortRequirements(s.reqs)
	return s
}

// ParseLabelSelector parses Kubernetes' label selector syntax:
//
//	env=prod, tier!=web, app in (a,b), app notin (c), release, !canary, n>3
//
// Keys and values are validated as label keys and values.
func ParseLabelSelector(s string) (LabelSelector, error) {
	p := labelParser{in: s}
	var out LabelSelector
	p.skipSpace()
	if p.eof() {
		return out, nil
	}
	for {
		r, err := p.requirement()
		if err != nil {
			return LabelSelector{}, fmt.Errorf("%w: %q: %w", ErrInvalidSelector, s, err)
		}
		out.reqs = append(out.reqs, r)
		p.skipSpace()
		if p.eof() {
			break
		}
		if p.in[p.pos] != ',' {
			return LabelSelector{}, fmt.Errorf("%w: %q: expected ',' at offset %d", ErrInvalidSelector, s, p.pos)
		}
		p.pos++
	}
	sortRequirements(out.reqs)
	return out, nil
}

func sortRequirements(reqs []Requirement) {
	slices.SortStableFunc(reqs, func(a, b Requirement) int { return strings.Compare(a.Key, b.Key) })
}

type labelParser struct {
	in  string
	pos int
}

func (p *labelParser) eof() bool { return p.pos >= len(p.in) }

func (p *labelParser) skipSpace() {
	for !p.eof() && (p.in[p.pos] == ' ' || p.in[p.pos] == '\t') {
		p.pos++
	}
}

// word reads a run of characters that may appear in a label key or value.
func (p *labelParser) word() string {
	start := p.pos
	for !p.eof() {
		c := p.in[p.pos]
		if isAlnum(c) || c == '-' || c == '_' || c == '.' || c == '/' {
			p.pos++
			continue
		}
		break
	}
	return p.in[start:p.pos]
}

func (p *labelParser) requirement() (Requirement, error) {
	p.skipSpace()
	if !p.eof() && p.in[p.pos] == '!' {
		p.pos++
		p.skipSpace()
		key := p.word()
		if err := ValidateLabelKey(key); err != nil {
			return Requirement{}, err
		}
		return Requirement{Key: key, Operator: OpDoesNotExist}, nil
	}
	key := p.word()
	if err := ValidateLabelKey(key); err != nil {
		return Requirement{}, err
	}
	p.skipSpace()
	if p.eof() || p.in[p.pos] == ',' {
		return Requirement{Key: key, Operator: OpExists}, nil
	}
	op, err := p.operator()
	if err != nil {
		return Requirement{}, err
	}
	r := Requirement{Key: key, Operator: op}
	p.skipSpace()
	if op == OpIn || op == OpNotIn {
		r.Values, err = p.valueSet()
		return r, err
	}
	v := p.word()
	if op == OpGreaterThan || op == OpLessThan {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return Requirement{}, fmt.Errorf("value %q for %s must be an integer", v, op)
		}
	} else if err := ValidateLabelValue(v); err != nil {
		return Requirement{}, err
	}
	r.Values = []string{v}
	return r, nil
}

func (p *labelParser) operator() (Operator, error) {
	rest := p.in[p.pos:]
	for _, c := range []struct {
		text string
		op   Operator
	}{{"==", OpDoubleEquals}, {"!=", OpNotEquals}, {"=", OpEquals}, {">", OpGreaterThan}, {"<", OpLessThan}} {
		if strings.HasPrefix(rest, c.text) {
			p.pos += len(c.text)
			return c.op, nil
		}
	}
	w := p.word()
	switch w {
	case "in":
		return OpIn, nil
	case "notin":
		return OpNotIn, nil
	}
	return "", fmt.Errorf("unknown operator at offset %d", p.pos-len(w))
}

func (p *labelParser) valueSet() ([]string, error) {
	if p.eof() || p.in[p.pos] != '(' {
		return nil, fmt.Errorf("expected '(' at offset %d", p.pos)
	}
	p.pos++
	var vals []string
	for {
		p.skipSpace()
		v := p.word()
		if err := ValidateLabelValue(v); err != nil {
			return nil, err
		}
		vals = append(vals, v)
		p.skipSpace()
		if p.eof() {
			return nil, errors.New("unterminated value set")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case ')':
			p.pos++
			slices.Sort(vals)
			return slices.Compact(vals), nil
		default:
			return nil, fmt.Errorf("unexpected %q at offset %d", p.in[p.pos], p.pos)
		}
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
