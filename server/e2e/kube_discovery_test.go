package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// TestKubeResolveResource resolves names as kubectl does against a real
// kube-apiserver, which answers aggregated discovery, including a custom
// resource that appears in discovery once its CRD is established.
func TestKubeResolveResource(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	cfg := s.AdminConfig()
	var requests atomic.Int64
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	}
	c := kubeClient(t, cfg)
	ctx := t.Context()

	lists, err := c.ServerResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lists) < 10 || lists[0].GroupVersion != "v1" {
		t.Fatalf("ServerResources: %d lists, first %q", len(lists), lists[0].GroupVersion)
	}
	// Aggregated discovery: /api and /apis, not one request per group.
	if n := requests.Load(); n != 2 {
		t.Errorf("ServerResources sent %d requests, want 2 (aggregated discovery)", n)
	}

	core := func(r string) client.GroupVersionResource {
		return client.GroupVersionResource{Version: "v1", Resource: r}
	}
	deployments := client.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	for _, tc := range []struct {
		name       string
		want       client.GroupVersionResource
		namespaced bool
	}{
		{"pods", core("pods"), true},
		{"po", core("pods"), true},
		{"Pod", core("pods"), true},
		{"ns", core("namespaces"), false},
		{"events", core("events"), true}, // also events.k8s.io: core first
		{"events.events.k8s.io", client.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, true},
		{"deploy", deployments, true},
		{"deployments.apps", deployments, true},
		{"deployment.v1.apps", deployments, true},
		{"leases.coordination.k8s.io", client.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, true},
		{"crd", client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, false},
	} {
		got, namespaced, err := c.ResolveResource(ctx, tc.name)
		if err != nil || got != tc.want || namespaced != tc.namespaced {
			t.Errorf("%s: %v namespaced=%v %v; want %v namespaced=%v", tc.name, got, namespaced, err, tc.want, tc.namespaced)
		}
	}
	for _, name := range []string{"gizmos", "pods.apps", "pods/log", "bindings", "deployments.v9.apps"} {
		if _, _, err := c.ResolveResource(ctx, name); !errors.Is(err, client.ErrUnknownResource) {
			t.Errorf("%s: %v, want ErrUnknownResource", name, err)
		}
	}

	// A CRD's resource resolves once discovery serves it.
	suffix := time.Now().UnixNano() % 1e9
	group := fmt.Sprintf("e2e%d.example.com", suffix)
	crds := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &object.Unstructured{}
	if err := crd.UnmarshalJSON(fmt.Appendf(nil, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.%s"},
		"spec":{"group":%q,"scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","shortNames":["wdg"]},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`,
		group, group)); err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = crds.Delete(ctx, "widgets."+group, wire.DeleteOptions{}) })
	want := client.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, namespaced, err := c.ResolveResource(ctx, "widgets."+group)
		if err == nil {
			if got != want || !namespaced {
				t.Fatalf("widgets.%s: %v namespaced=%v", group, got, namespaced)
			}
			break
		}
		if !errors.Is(err, client.ErrUnknownResource) || time.Now().After(deadline) {
			t.Fatalf("widgets.%s never resolved: %v", group, err)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
	if got, _, err := c.ResolveResource(ctx, "wdg."+group); err != nil || got != want {
		t.Errorf("wdg.%s: %v %v", group, got, err)
	}
}

// TestKubeVersionSameAsOurs: /version reports the release as
// kube-apiserver v1.37.2 does, field for field, except what identifies a
// build (commit, tree state, build date, Go version): kubectl, Helm's
// kubeVersion constraints and client-go's discovery parse these.
func TestKubeVersionSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, _ := sideBySide(t)
	version := func(c *rawClient) map[string]any {
		code, m := c.do("GET", "/version", "", "")
		if code != http.StatusOK {
			t.Fatalf("/version: %d %v", code, m)
		}
		for _, build := range []string{"gitCommit", "gitTreeState", "buildDate", "goVersion"} {
			delete(m, build)
		}
		return m
	}
	k, o := version(kube), version(ours)
	if !reflect.DeepEqual(k, o) {
		t.Errorf("/version:\n kube:  %v\n serve: %v", k, o)
	}
}
