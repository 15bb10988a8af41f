package client_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestResolveResourceAgainstServer resolves names through listwatch
// serve's legacy discovery documents.
func TestResolveResourceAgainstServer(t *testing.T) {
	srv := apiservertest.Start(t, "")
	cfg, err := client.LoadKubeconfig(srv.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.QPS, cfg.Burst = -1, 0 // some twenty discoveries in a row
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
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
		if _, _, err := c.ResolveResource(t.Context(), arg); !errors.Is(err, client.ErrUnknownResource) {
			t.Errorf("%q: %v, want client.ErrUnknownResource", arg, err)
		}
	}
	lists, err := c.ServerResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(lists) == 0 || lists[0].GroupVersion != "v1" {
		t.Fatalf("ServerResources: core group not first: %d lists", len(lists))
	}
	if gvr, _, err := client.FindResource(lists, "leases"); err != nil || gvr != leases {
		t.Errorf("client.FindResource(leases) = %v, %v", gvr, err)
	}
}
