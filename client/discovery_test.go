package client

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// aggregatedCore and aggregatedGroups are what kube-apiserver answers
// /api and /apis with when asked for aggregated discovery; example.com's
// v1alpha1 is stale (its aggregated API server is down).
const aggregatedCore = `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
 {"metadata":{"creationTimestamp":null},"versions":[{"version":"v1","freshness":"Current","resources":[
  {"resource":"pods","responseKind":{"group":"","version":"v1","kind":"Pod"},"scope":"Namespaced","singularResource":"pod",
   "verbs":["create","delete","get","list","watch"],"shortNames":["po"],"categories":["all"],
   "subresources":[{"subresource":"log","responseKind":{"group":"","version":"v1","kind":"Pod"},"verbs":["get"]}]},
  {"resource":"namespaces","responseKind":{"group":"","version":"v1","kind":"Namespace"},"scope":"Cluster","singularResource":"namespace",
   "verbs":["get","list","watch"],"shortNames":["ns"]}]}]}]}`

const aggregatedGroups = `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
 {"metadata":{"name":"apps"},"versions":[{"version":"v1","freshness":"Current","resources":[
  {"resource":"deployments","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},"scope":"Namespaced",
   "singularResource":"deployment","verbs":["list","watch"],"shortNames":["deploy"]}]}]},
 {"metadata":{"name":"example.com"},"versions":[
  {"version":"v1","freshness":"Current","resources":[
   {"resource":"widgets","responseKind":{"group":"example.com","version":"v1","kind":"Widget"},"scope":"Cluster",
    "singularResource":"widget","verbs":["list","watch"]}]},
  {"version":"v1alpha1","freshness":"Stale"}]}]}`

// discoveryServer answers discovery requests, aggregated or legacy, and
// records the Accept header and path of each.
type discoveryServer struct {
	mu       sync.Mutex // guards seen
	seen     []string   // "path accept"
	answer   func(w http.ResponseWriter, r *http.Request)
	accepted []string
}

func (d *discoveryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.seen = append(d.seen, r.URL.Path+" "+r.Header.Get("Accept"))
	d.mu.Unlock()
	d.answer(w, r)
}

func (d *discoveryServer) requests() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.seen)
}

func TestServerResourcesAggregated(t *testing.T) {
	d := &discoveryServer{answer: func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Accept"), aggregatedContentType+",") {
			writeStatus(w, &wire.Status{Code: 406, Reason: wire.ReasonNotAcceptable})
			return
		}
		// Parameters in another order than asked, as the server may.
		w.Header().Set("Content-Type", "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io;charset=utf-8")
		switch r.URL.Path {
		case "/api":
			_, _ = w.Write([]byte(aggregatedCore))
		case "/apis":
			_, _ = w.Write([]byte(aggregatedGroups))
		default:
			writeStatus(w, &wire.Status{Code: 404, Reason: wire.ReasonNotFound})
		}
	}}
	c := newTestClient(t, startTLS(t, d), nil)

	lists, err := c.ServerResources(t.Context())
	if !errors.Is(err, ErrPartialDiscovery) || !strings.Contains(err.Error(), "example.com/v1alpha1") {
		t.Fatalf("ServerResources error %v, want ErrPartialDiscovery naming the stale version", err)
	}
	var gvs []string
	for _, l := range lists {
		gvs = append(gvs, l.GroupVersion)
	}
	if want := []string{"v1", "apps/v1", "example.com/v1"}; !slices.Equal(gvs, want) {
		t.Fatalf("group versions %v, want %v", gvs, want)
	}
	pods := lists[0].Resources
	if len(pods) != 3 || pods[0].Name != "pods" || pods[0].Kind != "Pod" || !pods[0].Namespaced ||
		pods[0].SingularName != "pod" || pods[1].Name != "pods/log" || pods[2].Namespaced {
		t.Fatalf("core resources %+v", pods)
	}
	if got := d.requests(); len(got) != 2 || got[0] != "/api "+discoveryAccept || got[1] != "/apis "+discoveryAccept {
		t.Fatalf("requests %q, want only /api and /apis asking for aggregated discovery", got)
	}

	for name, want := range map[string]GroupVersionResource{
		"po":                  {Version: "v1", Resource: "pods"},
		"deploy":              {Group: "apps", Version: "v1", Resource: "deployments"},
		"widgets.example.com": {Group: "example.com", Version: "v1", Resource: "widgets"},
		"Widget":              {Group: "example.com", Version: "v1", Resource: "widgets"},
	} {
		got, namespaced, err := c.ResolveResource(t.Context(), name)
		if err != nil || got != want || namespaced != (want.Resource != "widgets") {
			t.Errorf("%s: %v namespaced=%v %v, want %v", name, got, namespaced, err, want)
		}
	}
	// Nothing matched and a version was stale: both show in the error.
	_, _, err = c.ResolveResource(t.Context(), "gizmos.v1alpha1.example.com")
	if !errors.Is(err, ErrUnknownResource) || !errors.Is(err, ErrPartialDiscovery) {
		t.Fatalf("stale version: %v, want ErrUnknownResource and ErrPartialDiscovery", err)
	}
}

func TestServerResourcesLegacyFallback(t *testing.T) {
	docs := map[string]any{
		"/api": wire.APIVersions{Versions: []string{"v1"}},
		"/apis": wire.APIGroupList{Groups: []wire.APIGroup{
			{Name: "apps", PreferredVersion: wire.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"},
				Versions: []wire.GroupVersionForDiscovery{{GroupVersion: "apps/v1beta1", Version: "v1beta1"}, {GroupVersion: "apps/v1", Version: "v1"}}},
			{Name: "broken.example.com", PreferredVersion: wire.GroupVersionForDiscovery{GroupVersion: "broken.example.com/v1", Version: "v1"},
				Versions: []wire.GroupVersionForDiscovery{{GroupVersion: "broken.example.com/v1", Version: "v1"}}},
		}},
		"/api/v1": wire.APIResourceList{Resources: []wire.APIResource{
			{Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}, Verbs: []string{"list", "watch"}}}},
		"/apis/apps/v1": wire.APIResourceList{GroupVersion: "apps/v1", Resources: []wire.APIResource{
			{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true, Verbs: []string{"list", "watch"}}}},
		"/apis/apps/v1beta1": wire.APIResourceList{GroupVersion: "apps/v1beta1", Resources: []wire.APIResource{
			{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true, Verbs: []string{"list", "watch"}},
			{Name: "olddeployments", Kind: "OldDeployment", Namespaced: true, Verbs: []string{"list", "watch"}}}},
	}
	d := &discoveryServer{answer: func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			writeStatus(w, &wire.Status{Code: 503, Reason: wire.ReasonServiceUnavailable})
			return
		}
		w.Header().Set("Content-Type", "application/json") // no aggregated discovery
		_ = json.NewEncoder(w).Encode(doc)
	}}
	c := newTestClient(t, startTLS(t, d), nil)

	lists, err := c.ServerResources(t.Context())
	if !errors.Is(err, ErrPartialDiscovery) || !strings.Contains(err.Error(), "broken.example.com/v1") {
		t.Fatalf("ServerResources error %v, want ErrPartialDiscovery naming the broken group", err)
	}
	var gvs []string
	for _, l := range lists {
		gvs = append(gvs, l.GroupVersion)
	}
	// The core list's groupVersion is filled in; the preferred version first.
	if want := []string{"v1", "apps/v1", "apps/v1beta1"}; !slices.Equal(gvs, want) {
		t.Fatalf("group versions %v, want %v", gvs, want)
	}
	for name, want := range map[string]GroupVersionResource{
		"cm":                         {Version: "v1", Resource: "configmaps"},
		"deployments":                {Group: "apps", Version: "v1", Resource: "deployments"},
		"deployments.v1beta1.apps":   {Group: "apps", Version: "v1beta1", Resource: "deployments"},
		"olddeployments":             {Group: "apps", Version: "v1beta1", Resource: "olddeployments"},
		"configmaps.v1":              {Version: "v1", Resource: "configmaps"},
		"deployment.apps":            {Group: "apps", Version: "v1", Resource: "deployments"},
		"OldDeployment.v1beta1.apps": {Group: "apps", Version: "v1beta1", Resource: "olddeployments"},
	} {
		got, _, err := c.ResolveResource(t.Context(), name)
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", name, got, err, want)
		}
	}
	// A qualified name reads only the documents of its group.
	before := len(d.requests())
	if _, _, err := c.ResolveResource(t.Context(), "deployments.apps"); err != nil {
		t.Fatal(err)
	}
	for _, r := range d.requests()[before:] {
		if strings.HasPrefix(r, "/api/v1 ") || strings.HasPrefix(r, "/apis/broken") {
			t.Errorf("deployments.apps read %q", r)
		}
	}
}

// TestServerResourcesRefused: a server that refuses /apis gives no lists
// and an error that is not a partial discovery.
func TestServerResourcesRefused(t *testing.T) {
	d := &discoveryServer{answer: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api" {
			_ = json.NewEncoder(w).Encode(wire.APIVersions{Versions: []string{}})
			return
		}
		writeStatus(w, &wire.Status{Code: 403, Reason: wire.ReasonForbidden})
	}}
	c := newTestClient(t, startTLS(t, d), nil)
	lists, err := c.ServerResources(t.Context())
	if lists != nil || !IsForbidden(err) || errors.Is(err, ErrPartialDiscovery) {
		t.Fatalf("ServerResources = %d lists, %v; want none and a 403", len(lists), err)
	}
	if _, _, err := c.ResolveResource(t.Context(), "pods"); !IsForbidden(err) {
		t.Fatalf("ResolveResource: %v, want the 403", err)
	}
}

// FuzzAggregatedDiscovery: any body decodes to an error or to lists whose
// group versions are well formed and whose resources all have names.
func FuzzAggregatedDiscovery(f *testing.F) {
	f.Add([]byte(aggregatedCore))
	f.Add([]byte(aggregatedGroups))
	f.Add([]byte(`{"items":[{"versions":[{"version":""},{"version":"v1","resources":[{"resource":""},{"resource":"x","subresources":[{}]}]}]}]}`))
	f.Add([]byte(`{"items":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		agg, err := decodeAggregated(body)
		if err != nil {
			return
		}
		lists, stale := agg.resourceLists(func(string) bool { return true })
		for _, err := range stale {
			if err == nil {
				t.Fatal("nil stale error")
			}
		}
		for _, l := range lists {
			group, version := splitGroupVersion(l.GroupVersion)
			if version == "" || strings.Contains(version, "/") || (group == "" && strings.Contains(l.GroupVersion, "/")) {
				t.Fatalf("bad group version %q", l.GroupVersion)
			}
			for _, r := range l.Resources {
				if r.Name == "" || strings.HasPrefix(r.Name, "/") || strings.HasSuffix(r.Name, "/") || strings.Count(r.Name, "/") > 1 {
					t.Fatalf("%s: bad resource name %q", l.GroupVersion, r.Name)
				}
			}
			// Resolution over whatever was decoded never panics.
			_, _, _ = findResource(resourceRef{name: "x"}, lists, "x")
		}
	})
}
