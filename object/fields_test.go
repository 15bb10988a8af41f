package object

import (
	"errors"
	"testing"
)

func TestParseFieldSelector(t *testing.T) {
	fields := map[string]string{"metadata.name": "a,b", "metadata.namespace": "default", "spec.nodeName": ""}
	cases := []struct {
		sel   string
		match bool
	}{
		{"", true},
		{"metadata.namespace=default", true},
		{"metadata.namespace==default", true},
		{"metadata.namespace!=default", false},
		{`metadata.name=a\,b`, true},
		{"metadata.name=a", false},
		{"spec.nodeName=", true},
		{"spec.nodeName!=,metadata.namespace=default", false},
		{"other=", true},
	}
	for _, c := range cases {
		s, err := ParseFieldSelector(c.sel)
		if err != nil {
			t.Fatalf("%q: %v", c.sel, err)
		}
		if got := s.MatchesSet(fields); got != c.match {
			t.Errorf("%q matches=%v, want %v", c.sel, got, c.match)
		}
	}
	s, _ := ParseFieldSelector("metadata.namespace=ns1,metadata.name!=x")
	if v, ok := s.RequiresExactMatch("metadata.namespace"); !ok || v != "ns1" {
		t.Fatalf("RequiresExactMatch = %q %v", v, ok)
	}
	if _, ok := s.RequiresExactMatch("metadata.name"); ok {
		t.Fatal("!= reported as exact")
	}
	for _, bad := range []string{"noop", "=x", `a=b\`, "a=b=c"} {
		if _, err := ParseFieldSelector(bad); !errors.Is(err, ErrInvalidSelector) {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

// FuzzParseFieldSelector: accepted selectors round-trip through String.
func FuzzParseFieldSelector(f *testing.F) {
	for _, s := range []string{"a=b", `a\=b!=c\,d`, "x==y,z!=", "metadata.name=n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseFieldSelector(in)
		if err != nil {
			return
		}
		again, err := ParseFieldSelector(s.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", s.String(), in, err)
		}
		if again.String() != s.String() {
			t.Fatalf("unstable: %q vs %q", again.String(), s.String())
		}
	})
}
