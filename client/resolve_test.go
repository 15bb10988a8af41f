package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// discoveryFixture is a small discovery result, with a subresource, a
// short name shared by two groups, and a resource that cannot be watched.
var discoveryFixture = []wire.APIResourceList{
	{GroupVersion: "v1", Resources: []wire.APIResource{
		{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, ShortNames: []string{"po"}, Verbs: []string{"list", "watch", "get"}},
		{Name: "pods/log", Kind: "Pod", Namespaced: true, Verbs: []string{"get"}},
		{Name: "bindings", SingularName: "binding", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
	}},
	{GroupVersion: "apps/v1", Resources: []wire.APIResource{
		{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true, ShortNames: []string{"deploy", "po"}, Verbs: []string{"list", "watch"}},
	}},
	{GroupVersion: "example.com/v1beta1", Resources: []wire.APIResource{
		{Name: "gadgets", SingularName: "gadget", Kind: "Gadget", ShortNames: []string{"gd"}, Verbs: []string{"list", "watch"}},
	}},
}

func TestFindResourceFixture(t *testing.T) {
	for arg, want := range map[string]string{
		"po":                       "/v1, Resource=pods", // core first, even for a shared short name
		"po.apps":                  "apps/v1, Resource=deployments",
		"deploy":                   "apps/v1, Resource=deployments",
		"gd.v1beta1.example.com":   "example.com/v1beta1, Resource=gadgets",
		"gadgets.example.com":      "example.com/v1beta1, Resource=gadgets",
		"deployment.v1.apps":       "apps/v1, Resource=deployments",
		"binding":                  "error",
		"log":                      "error",
		"gadgets.v1.example.com":   "error",
		"gadgets.com":              "error",
		"deployments.v1beta1.apps": "error",
	} {
		ref, err := parseResourceName(arg)
		var got string
		if err == nil {
			var gvr GroupVersionResource
			gvr, _, err = findResource(ref, discoveryFixture, arg)
			got = gvr.Group + "/" + gvr.Version + ", Resource=" + gvr.Resource
		}
		if err != nil {
			if !errors.Is(err, ErrUnknownResource) {
				t.Errorf("%s: %v", arg, err)
			}
			got = "error"
		}
		if got != want {
			t.Errorf("%s: %s, want %s", arg, got, want)
		}
	}
}

// FuzzResolveResource: parsing never panics, and a match always names a
// listable, watchable, non-subresource whose name, singular, kind or short
// name is the argument's first segment, in the group it names.
func FuzzResolveResource(f *testing.F) {
	for _, s := range []string{"pods", "po", "Pod", "deploy.apps", "deployment.v1.apps", "gd.v1beta1.example.com",
		"", ".", "a..b", "pods/log", "x.", " pods ", "PO.APPS", "bindings", "gadgets.example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		ref, err := parseResourceName(arg)
		if err != nil {
			if !errors.Is(err, ErrUnknownResource) {
				t.Fatalf("parse %q: %v", arg, err)
			}
			return
		}
		if ref.name == "" || strings.ContainsAny(ref.name, "./") {
			t.Fatalf("parse %q: bad name %q", arg, ref.name)
		}
		gvr, _, err := findResource(ref, discoveryFixture, arg)
		if err != nil {
			if !errors.Is(err, ErrUnknownResource) {
				t.Fatalf("match %q: %v", arg, err)
			}
			return
		}
		gv := gvr.Version
		if gvr.Group != "" {
			gv = gvr.Group + "/" + gv
		}
		if !ref.matchesGroupVersion(gv) {
			t.Fatalf("%q matched %v outside the group it names", arg, gvr)
		}
		for _, l := range discoveryFixture {
			if l.GroupVersion != gv {
				continue
			}
			for _, r := range l.Resources {
				if r.Name != gvr.Resource {
					continue
				}
				names := append([]string{r.Name, r.SingularName, r.Kind}, r.ShortNames...)
				for _, n := range names {
					if strings.EqualFold(n, ref.name) {
						return
					}
				}
				t.Fatalf("%q matched %s, none of whose names is %q", arg, r.Name, ref.name)
			}
		}
		t.Fatalf("%q matched %v, which is not in discovery", arg, gvr)
	})
}
