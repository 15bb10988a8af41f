package client

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/apiserver/apiservertest"
	"github.com/listwatch/listwatch/wire"
)

// TestResolveResourceAgainstServer resolves names through listwatch
// serve's legacy discovery documents.
func TestResolveResourceAgainstServer(t *testing.T) {
	srv := apiservertest.Start(t, "")
	cfg, err := LoadKubeconfig(srv.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.QPS, cfg.Burst = -1, 0 // some twenty discoveries in a row
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	core := func(r string) GroupVersionResource {
		return GroupVersionResource{Version: "v1", Resource: r}
	}
	leases := GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	crds := GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, tc := range []struct {
		arg        string
		want       GroupVersionResource
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
		got, namespaced, err := c.ResolveResource(t.Context(), tc.arg)
		if err != nil {
			t.Errorf("%s: %v", tc.arg, err)
			continue
		}
		if got != tc.want || namespaced != tc.namespaced {
			t.Errorf("%s: got %v namespaced=%v, want %v namespaced=%v", tc.arg, got, namespaced, tc.want, tc.namespaced)
		}
	}
	for _, arg := range []string{"gizmos", "pods.apps", "leases.v2.coordination.k8s.io", "", "pods/log", "pods."} {
		if _, _, err := c.ResolveResource(t.Context(), arg); !errors.Is(err, ErrUnknownResource) {
			t.Errorf("%q: %v, want ErrUnknownResource", arg, err)
		}
	}
	lists, err := c.ServerResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(lists) == 0 || lists[0].GroupVersion != "v1" {
		t.Fatalf("ServerResources: core group not first: %d lists", len(lists))
	}
	if gvr, _, err := FindResource(lists, "leases"); err != nil || gvr != leases {
		t.Errorf("FindResource(leases) = %v, %v", gvr, err)
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
