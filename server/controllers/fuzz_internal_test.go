package controllers

import (
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/object"
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

// FuzzParseKeys: the group version and queue key parsers never panic,
// and a key made by gcKey parses back.
func FuzzParseKeys(f *testing.F) {
	f.Add("apps/v1", "configmaps", "ns", "name")
	f.Add("v1", "pods", "", "n")
	f.Add("/", "a/b", "x", "")
	f.Fuzz(func(t *testing.T, gv, resource, ns, name string) {
		group, version, ok := parseGroupVersion(gv)
		parseGCKey(gv + "/" + resource + "/" + ns + "/" + name)
		if !ok || strings.Contains(resource, "/") || strings.Contains(ns, "/") || strings.Contains(name, "/") {
			return
		}
		res := gcResource{}
		res.gvr.Group, res.gvr.Version, res.gvr.Resource = group, version, resource
		o := &object.Unstructured{Object: map[string]any{}}
		o.SetNamespace(ns)
		o.SetName(name)
		gvr, gotNS, gotName, ok := parseGCKey(gcKey(res, o))
		if !ok || gvr != res.gvr || gotNS != ns || gotName != name {
			t.Fatalf("key of %v %q %q parsed as %v %q %q %v", res.gvr, ns, name, gvr, gotNS, gotName, ok)
		}
	})
}
