package controllers

import (
	"slices"
	"strings"
	"testing"
)

// FuzzControllersList: any --controllers list is resolved or refused
// with ErrUnknownController, never a panic; what it enables is known.
func FuzzControllersList(f *testing.F) {
	for _, s := range []string{"*", "", "*,-garbagecollector", "namespace,-namespace", "-", ",,", "-*", "nope"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Enabled(strings.Split(s, ","))
		if err != nil {
			return
		}
		for _, name := range got {
			if !slices.Contains(Names(), name) {
				t.Fatalf("Enabled(%q) = %v", s, got)
			}
		}
	})
}

// FuzzParseKeys: the group version parser never panics, and what it
// accepts joins back to its input.
func FuzzParseKeys(f *testing.F) {
	f.Add("apps/v1")
	f.Add("v1")
	f.Add("/")
	f.Fuzz(func(t *testing.T, gv string) {
		group, version, ok := parseGroupVersion(gv)
		if !ok {
			return
		}
		back := version
		if group != "" {
			back = group + "/" + version
		}
		if back != gv {
			t.Fatalf("%q parsed as %q %q", gv, group, version)
		}
	})
}
