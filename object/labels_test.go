package object

import (
	"errors"
	"testing"
)

func TestParseLabelSelector(t *testing.T) {
	labels := map[string]string{"env": "prod", "tier": "web", "n": "5", "example.com/app": "x"}
	cases := []struct {
		sel   string
		match bool
		canon string
	}{
		{"", true, ""},
		{"env=prod", true, "env=prod"},
		{"env==prod", true, "env==prod"},
		{"env!=prod", false, "env!=prod"},
		{"env in (dev, prod)", true, "env in (dev,prod)"},
		{"env notin (prod)", false, "env notin (prod)"},
		{"tier,env", true, "env,tier"},
		{"!canary", true, "!canary"},
		{"!env", false, "!env"},
		{"n>3,n<6", true, "n>3,n<6"},
		{"n>5", false, "n>5"},
		{"example.com/app=x", true, "example.com/app=x"},
		{"missing!=a", true, "missing!=a"},
		{" env = prod , tier in (web) ", true, "env=prod,tier in (web)"},
		{"env=", false, "env="},
	}
	for _, c := range cases {
		s, err := ParseLabelSelector(c.sel)
		if err != nil {
			t.Fatalf("%q: %v", c.sel, err)
		}
		if got := s.Matches(labels); got != c.match {
			t.Errorf("%q matches=%v, want %v", c.sel, got, c.match)
		}
		get := func(k string) (string, bool) { v, ok := labels[k]; return v, ok }
		if got := s.MatchesFunc(get); got != c.match {
			t.Errorf("%q MatchesFunc=%v, want %v", c.sel, got, c.match)
		}
		if s.String() != c.canon {
			t.Errorf("%q canonical %q, want %q", c.sel, s.String(), c.canon)
		}
	}
	for _, bad := range []string{"=x", "a=b=c", "a in b", "a in (b", "a b", "-a=b", "a=-b", "a>x", ",", "a,", "Bad Key=v"} {
		if _, err := ParseLabelSelector(bad); !errors.Is(err, ErrInvalidSelector) {
			t.Errorf("%q: got %v, want ErrInvalidSelector", bad, err)
		}
	}
}

func TestSelectorFromSet(t *testing.T) {
	s := SelectorFromSet(map[string]string{"b": "2", "a": "1"})
	if s.String() != "a=1,b=2" || !s.Matches(map[string]string{"a": "1", "b": "2", "c": "3"}) || s.Matches(map[string]string{"a": "1"}) {
		t.Fatalf("bad selector %q", s)
	}
}

// FuzzParseLabelSelector: parsing never panics, and the canonical form of
// any accepted selector parses back to the same canonical form and the same
// decisions.
func FuzzParseLabelSelector(f *testing.F) {
	for _, s := range []string{"a=b", "a in (x,y),!c", "k8s.io/x notin (1)", "n>1", "a,b!=c"} {
		f.Add(s, "a", "x")
	}
	f.Fuzz(func(t *testing.T, in, k, v string) {
		s, err := ParseLabelSelector(in)
		if err != nil {
			return
		}
		again, err := ParseLabelSelector(s.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", s.String(), in, err)
		}
		if again.String() != s.String() {
			t.Fatalf("canonical form unstable: %q vs %q", again.String(), s.String())
		}
		l := map[string]string{k: v}
		if s.Matches(l) != again.Matches(l) {
			t.Fatalf("decisions differ for %q", in)
		}
		get := func(key string) (string, bool) { val, ok := l[key]; return val, ok }
		if s.MatchesFunc(get) != s.Matches(l) {
			t.Fatalf("MatchesFunc and Matches differ for %q", in)
		}
	})
}
