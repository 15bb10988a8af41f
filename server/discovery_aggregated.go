package server

import (
	"net/http"
	"strings"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"

	"github.com/listwatch/listwatch/wire"
)

// aggregatedDiscovery serves /api and /apis as kube-apiserver does when a
// client asks for aggregated discovery
// (application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, or
// its protobuf form): one document per root with every group, version and
// resource, an ETag, and 304 Not Modified for a matching If-None-Match.
// Negotiation, encoding and ETags are kube's own (k8s.io/apiserver's
// aggregated discovery handler); the content is derived from the legacy
// per-group-version documents, so the two forms always agree. Any other
// Accept gets the legacy documents.
//
// The documents are rebuilt lazily: a request compares the registry's
// generation with the one last published and republishes when a CRD
// changed what is served.
type aggregatedDiscovery struct {
	core, groups     http.Handler // negotiation wrappers: aggregated, else legacy
	coreRM, groupsRM aggregated.ResourceManager

	mu           sync.Mutex
	hasPublished bool   // guarded by mu
	gen          uint64 // guarded by mu: the registry generation published
}

func newAggregatedDiscovery(s *Server) *aggregatedDiscovery {
	a := &aggregatedDiscovery{
		coreRM:   aggregated.NewResourceManager("api"),
		groupsRM: aggregated.NewResourceManager("apis"),
	}
	legacy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.discovery(w, r, strings.TrimSuffix(r.URL.Path, "/"))
	})
	a.core = aggregated.WrapAggregatedDiscoveryToHandler(legacy, a.coreRM, nil)
	a.groups = aggregated.WrapAggregatedDiscoveryToHandler(legacy, a.groupsRM, nil)
	return a
}

// serve answers /api or /apis (p is the path without a trailing slash).
func (a *aggregatedDiscovery) serve(s *Server, w http.ResponseWriter, r *http.Request, p string) {
	a.refresh(s)
	if p == "/api" {
		a.core.ServeHTTP(w, r)
		return
	}
	a.groups.ServeHTTP(w, r)
}

// refresh republishes both documents when the registry changed since they
// were last built.
func (a *aggregatedDiscovery) refresh(s *Server) {
	gen := s.reg.generation()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hasPublished && a.gen == gen {
		return
	}
	core, groups := s.aggregatedGroups()
	a.coreRM.SetGroups(core)
	a.groupsRM.SetGroups(groups)
	// Priorities keep the legacy documents' order: groups as /apis lists
	// them, versions preferred first.
	for i, g := range groups {
		for j, v := range g.Versions {
			a.groupsRM.SetGroupVersionPriority(metav1.GroupVersion{Group: g.Name, Version: v.Version},
				len(groups)-i, len(g.Versions)-j)
		}
	}
	a.gen, a.hasPublished = gen, true
}

// aggregatedGroups builds the aggregated documents of /api (the core
// group) and /apis from the legacy resource lists.
func (s *Server) aggregatedGroups() (core, groups []apidiscoveryv2.APIGroupDiscovery) {
	if list, ok := s.resourceList("", "v1"); ok {
		core = append(core, apidiscoveryv2.APIGroupDiscovery{
			Versions: []apidiscoveryv2.APIVersionDiscovery{versionDiscovery("", "v1", list)},
		})
	}
	names, versions := s.reg.groupVersions()
	for _, g := range names {
		group := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g}}
		for _, v := range versions[g] {
			if list, ok := s.resourceList(g, v); ok {
				group.Versions = append(group.Versions, versionDiscovery(g, v, list))
			}
		}
		if len(group.Versions) > 0 {
			groups = append(groups, group)
		}
	}
	return core, groups
}

// versionDiscovery turns one legacy APIResourceList into its aggregated
// form: subresources ("pods/status") nest under their resource.
func versionDiscovery(group, version string, list wire.APIResourceList) apidiscoveryv2.APIVersionDiscovery {
	vd := apidiscoveryv2.APIVersionDiscovery{Version: version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	index := map[string]int{}
	for _, r := range list.Resources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(vd.Resources)
		vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource:         r.Name,
			ResponseKind:     &metav1.GroupVersionKind{Kind: r.Kind},
			Scope:            scope,
			SingularResource: r.SingularName,
			Verbs:            r.Verbs,
			ShortNames:       r.ShortNames,
			Categories:       r.Categories,
		})
	}
	for _, r := range list.Resources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok {
			continue
		}
		i, found := index[parent]
		if !found {
			continue
		}
		// As kube's: group and version are named only when they differ
		// from the resource's (a Scale in autoscaling/v1).
		kind := &metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		vd.Resources[i].Subresources = append(vd.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: kind, Verbs: r.Verbs,
		})
	}
	return vd
}
