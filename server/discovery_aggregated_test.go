package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
)

const acceptAggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

func aggregatedList(t *testing.T, e *env, p string, hdr ...string) (apidiscoveryv2.APIGroupDiscoveryList, response) {
	t.Helper()
	r := e.do("GET", p, nil, append([]string{"Accept", acceptAggregated}, hdr...)...)
	var list apidiscoveryv2.APIGroupDiscoveryList
	if r.code == http.StatusOK {
		if err := json.Unmarshal(r.body, &list); err != nil {
			t.Fatalf("%s: %v: %s", p, err, r.body)
		}
	}
	return list, r
}

// resourceNames lists "group/version/resource[/sub]" for every resource in
// an aggregated document.
func resourceNames(list apidiscoveryv2.APIGroupDiscoveryList) []string {
	var out []string
	for _, g := range list.Items {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				out = append(out, g.Name+"/"+v.Version+"/"+r.Resource)
				for _, s := range r.Subresources {
					out = append(out, g.Name+"/"+v.Version+"/"+r.Resource+"/"+s.Subresource)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// legacyNames lists the same names from the legacy documents.
func legacyNames(t *testing.T, e *env) []string {
	t.Helper()
	var out []string
	for _, n := range discoveryNames(t, e, "/api/v1") {
		out = append(out, "/v1/"+n)
	}
	var groups struct {
		Groups []struct {
			Name     string `json:"name"`
			Versions []struct {
				Version string `json:"version"`
			} `json:"versions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(e.do("GET", "/apis", nil).body, &groups); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			for _, n := range discoveryNames(t, e, "/apis/"+g.Name+"/"+v.Version) {
				out = append(out, g.Name+"/"+v.Version+"/"+n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestAggregatedDiscovery: /api and /apis answer the aggregated form to
// clients that ask for it (kubectl 1.30+, client-go), with the same content
// as the legacy documents, an ETag honoured by If-None-Match, and a new
// CRD's group as soon as it is served; other clients get the legacy form.
func TestAggregatedDiscovery(t *testing.T) {
	e := newEnv(t)

	legacy := e.do("GET", "/apis", nil, "Accept", "application/json")
	if ct := legacy.hdr.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("legacy Content-Type %q", ct)
	}
	if kind := legacy.json(t)["kind"]; kind != "APIGroupList" {
		t.Fatalf("legacy kind %v", kind)
	}

	core, r := aggregatedList(t, e, "/api")
	if r.code != http.StatusOK {
		t.Fatalf("/api: %d %s", r.code, r.body)
	}
	if ct := r.hdr.Get("Content-Type"); ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
		t.Fatalf("/api Content-Type %q", ct)
	}
	if core.Kind != "APIGroupDiscoveryList" || core.APIVersion != "apidiscovery.k8s.io/v2" {
		t.Fatalf("/api type %s %s", core.APIVersion, core.Kind)
	}
	if len(core.Items) != 1 || core.Items[0].Name != "" || core.Items[0].Versions[0].Version != "v1" {
		t.Fatalf("/api groups: %+v", core.Items)
	}
	var pods *apidiscoveryv2.APIResourceDiscovery
	for i, res := range core.Items[0].Versions[0].Resources {
		if res.Resource == "pods" {
			pods = &core.Items[0].Versions[0].Resources[i]
		}
	}
	if pods == nil || pods.Scope != apidiscoveryv2.ScopeNamespace || pods.ResponseKind.Kind != "Pod" ||
		pods.SingularResource != "pod" || !slices.Contains(pods.ShortNames, "po") || !slices.Contains(pods.Categories, "all") {
		t.Fatalf("pods: %+v", pods)
	}
	if !slices.ContainsFunc(pods.Subresources, func(s apidiscoveryv2.APISubresourceDiscovery) bool { return s.Subresource == "status" }) {
		t.Fatalf("pods subresources: %+v", pods.Subresources)
	}

	groups, r := aggregatedList(t, e, "/apis")
	etag := r.hdr.Get("ETag")
	if etag == "" {
		t.Fatal("/apis: no ETag")
	}
	var legacyOrder, aggOrder []string
	for _, g := range legacy.json(t)["groups"].([]any) {
		legacyOrder = append(legacyOrder, g.(map[string]any)["name"].(string))
	}
	for _, g := range groups.Items {
		aggOrder = append(aggOrder, g.Name)
	}
	if !slices.Equal(aggOrder, legacyOrder) {
		t.Fatalf("group order: aggregated %v, legacy %v", aggOrder, legacyOrder)
	}
	all := apidiscoveryv2.APIGroupDiscoveryList{Items: append(core.Items, groups.Items...)}
	if got, want := resourceNames(all), legacyNames(t, e); !slices.Equal(got, want) {
		t.Fatalf("aggregated resources\n %v\nlegacy\n %v", got, want)
	}

	if _, r := aggregatedList(t, e, "/apis", "If-None-Match", etag); r.code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", r.code)
	}

	e.must(http.StatusCreated, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD("Namespaced", "v1", "v1beta1"))
	groups, r = aggregatedList(t, e, "/apis", "If-None-Match", etag)
	if r.code != http.StatusOK || r.hdr.Get("ETag") == etag {
		t.Fatalf("after a CRD: %d, ETag %q", r.code, r.hdr.Get("ETag"))
	}
	var versions []string
	for _, g := range groups.Items {
		if g.Name == "example.com" {
			for _, v := range g.Versions {
				versions = append(versions, v.Version)
			}
		}
	}
	if !slices.Equal(versions, []string{"v1", "v1beta1"}) {
		t.Fatalf("example.com versions %v", versions)
	}
	all = apidiscoveryv2.APIGroupDiscoveryList{Items: append(core.Items, groups.Items...)}
	if got, want := resourceNames(all), legacyNames(t, e); !slices.Equal(got, want) {
		t.Fatalf("after a CRD: aggregated\n %v\nlegacy\n %v", got, want)
	}
}
