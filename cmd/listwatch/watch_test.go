package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

func TestResolveResourceAgainstServer(t *testing.T) {
	cliLeakCheck(t)
	s := startCLIServer(t)
	core := func(r string) client.GroupVersionResource {
		return client.GroupVersionResource{Version: "v1", Resource: r}
	}
	leases := client.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	crds := client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, tc := range []struct {
		arg        string
		want       client.GroupVersionResource
		namespaced bool
	}{
		{"pods", core("pods"), true},
		{"pod", core("pods"), true},
		{"po", core("pods"), true},
		{"Pod", core("pods"), true},
		{"cm", core("configmaps"), true},
		{"ConfigMaps", core("configmaps"), true},
		{"namespaces", core("namespaces"), false},
		{"ns", core("namespaces"), false},
		{"lease", leases, true},
		{"leases.coordination.k8s.io", leases, true},
		{"leases.v1.coordination.k8s.io", leases, true},
		{"crd", crds, false},
		{"customresourcedefinitions.apiextensions.k8s.io", crds, false},
		{"configmaps.v1", core("configmaps"), true},
	} {
		got, err := resolveResource(t.Context(), s.client, tc.arg)
		if err != nil {
			t.Errorf("%s: %v", tc.arg, err)
			continue
		}
		if got.GVR != tc.want || got.Namespaced != tc.namespaced {
			t.Errorf("%s: got %+v, want %v namespaced=%v", tc.arg, got, tc.want, tc.namespaced)
		}
	}
	for _, arg := range []string{"gizmos", "pods.apps", "leases.v2.coordination.k8s.io", "", "pods/log", "pods."} {
		if _, err := resolveResource(t.Context(), s.client, arg); !errors.Is(err, errUnknownResource) {
			t.Errorf("%q: %v, want errUnknownResource", arg, err)
		}
	}
}

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

func TestMatchResourceFixture(t *testing.T) {
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
		ref, err := parseResourceArg(arg)
		var got string
		if err == nil {
			var info resourceInfo
			info, err = matchResource(ref, discoveryFixture, arg)
			got = info.GVR.Group + "/" + info.GVR.Version + ", Resource=" + info.GVR.Resource
		}
		if err != nil {
			if !errors.Is(err, errUnknownResource) {
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
		ref, err := parseResourceArg(arg)
		if err != nil {
			if !errors.Is(err, errUnknownResource) {
				t.Fatalf("parse %q: %v", arg, err)
			}
			return
		}
		if ref.name == "" || strings.ContainsAny(ref.name, "./") {
			t.Fatalf("parse %q: bad name %q", arg, ref.name)
		}
		info, err := matchResource(ref, discoveryFixture, arg)
		if err != nil {
			if !errors.Is(err, errUnknownResource) {
				t.Fatalf("match %q: %v", arg, err)
			}
			return
		}
		gv := info.GVR.Version
		if info.GVR.Group != "" {
			gv = info.GVR.Group + "/" + gv
		}
		if !ref.matchesGroupVersion(gv) {
			t.Fatalf("%q matched %v outside the group it names", arg, info.GVR)
		}
		for _, l := range discoveryFixture {
			if l.GroupVersion != gv {
				continue
			}
			for _, r := range l.Resources {
				if r.Name != info.GVR.Resource {
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
		t.Fatalf("%q matched %v, which is not in discovery", arg, info.GVR)
	})
}
