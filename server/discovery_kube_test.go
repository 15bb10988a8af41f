package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
)

// The fixture in testdata/kube-v1.37.2 is what a real kube-apiserver
// v1.37.2 (built by server/tools/kube/build.sh, started by run.sh with its
// defaults) answers: api.json and apis.json are its aggregated discovery
// documents (GET /api and /apis with Accept
// application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList),
// api-resources.txt and api-versions.txt kubectl 1.32's view of them.

func loadKubeDiscovery(t *testing.T) map[string]apidiscoveryv2.APIResourceDiscovery {
	t.Helper()
	out := map[string]apidiscoveryv2.APIResourceDiscovery{}
	for _, f := range []string{"api.json", "apis.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "kube-v1.37.2", f))
		if err != nil {
			t.Fatal(err)
		}
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		for _, g := range list.Items {
			for _, v := range g.Versions {
				for _, r := range v.Resources {
					out[g.Name+"/"+v.Version+"/"+r.Resource] = r
				}
			}
		}
	}
	return out
}

func kubeGroupNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kube-v1.37.2", "apis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range list.Items {
		names = append(names, g.Name)
	}
	return names
}

// TestDiscoveryMatchesKube: every built-in resource served is described
// in discovery exactly as kube-apiserver v1.37.2 describes it — scope,
// kind, singular name, verbs, short names, categories — and each of its
// subresources served exists in kube with the same kind and verbs, and
// each of kube's is served; groups
// come in kube's order. Every resource kube serves is served, but for the
// one gap the test names.
func TestDiscoveryMatchesKube(t *testing.T) {
	kube := loadKubeDiscovery(t)
	e := newEnv(t, withServiceAccountTokens(t)) // serviceaccounts/token too
	core, _ := aggregatedList(t, e, "/api")
	groups, _ := aggregatedList(t, e, "/apis")
	served := map[string]bool{}
	for _, g := range append(core.Items, groups.Items...) {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				key := g.Name + "/" + v.Version + "/" + r.Resource
				served[key] = true
				k, ok := kube[key]
				if !ok {
					t.Errorf("%s: not served by kube-apiserver v1.37.2", key)
					continue
				}
				if r.Scope != k.Scope || *r.ResponseKind != *k.ResponseKind || r.SingularResource != k.SingularResource ||
					!slices.Equal(r.Verbs, k.Verbs) || !slices.Equal(r.ShortNames, k.ShortNames) || !slices.Equal(r.Categories, k.Categories) {
					t.Errorf("%s:\n listwatch %+v\n kube      %+v", key, r, k)
				}
				for _, s := range r.Subresources {
					i := slices.IndexFunc(k.Subresources, func(ks apidiscoveryv2.APISubresourceDiscovery) bool { return ks.Subresource == s.Subresource })
					if i < 0 {
						t.Errorf("%s/%s: not a subresource in kube", key, s.Subresource)
						continue
					}
					ks := k.Subresources[i]
					if *s.ResponseKind != *ks.ResponseKind || !slices.Equal(s.Verbs, ks.Verbs) {
						t.Errorf("%s/%s:\n listwatch %+v\n kube      %+v", key, s.Subresource, s, ks)
					}
				}
				for _, ks := range k.Subresources {
					if !slices.ContainsFunc(r.Subresources, func(s apidiscoveryv2.APISubresourceDiscovery) bool { return s.Subresource == ks.Subresource }) {
						t.Errorf("%s/%s: served by kube-apiserver v1.37.2, not listed by listwatch", key, ks.Subresource)
					}
				}
			}
		}
	}
	var missing []string
	for key := range kube {
		if !served[key] {
			missing = append(missing, key)
		}
	}
	slices.Sort(missing)
	t.Logf("served %d of kube-apiserver v1.37.2's %d resources; not yet: %v", len(served), len(kube), missing)
	if len(missing) > 0 {
		t.Errorf("kube-apiserver v1.37.2 serves these, listwatch does not: %v", missing)
	}

	var order []string
	for _, g := range groups.Items {
		order = append(order, g.Name)
	}
	kubeOrder := slices.DeleteFunc(kubeGroupNames(t), func(g string) bool { return !slices.Contains(order, g) })
	if !slices.Equal(order, kubeOrder) {
		t.Errorf("groups in /apis: %v, kube's order %v", order, kubeOrder)
	}
}
