package garbagecollector

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// resourceInfo is what discovery says about one monitored resource.
type resourceInfo struct {
	kind       string
	namespaced bool
}

// ignoredResources are not monitored, as in kube: events are never owners
// worth collecting through the graph and churn too much.
var ignoredResources = map[[2]string]bool{
	{"", "events"}:              true,
	{"events.k8s.io", "events"}: true,
}

// mapping is where objects of one kind are served.
type mapping struct {
	gvr        client.GroupVersionResource
	namespaced bool
}

type groupKind struct{ group, kind string }
type groupVersionKind struct{ group, version, kind string }

// restMapper maps an ownerReference's apiVersion and kind to a resource.
// It is replaced whole after each discovery; safe for concurrent use.
type restMapper struct {
	mu sync.RWMutex
	// exact maps group, version and kind; preferred maps group and kind to
	// the server's preferred version serving it. Guarded by mu.
	exact     map[groupVersionKind]mapping
	preferred map[groupKind]mapping
}

// errRESTMapping: the kind is not (yet) known to discovery. Transient when
// a CRD is being created; retried with backoff as kube does.
type errRESTMapping struct{ apiVersion, kind string }

func (e *errRESTMapping) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s", e.apiVersion, e.kind)
}

// resourceFor maps apiVersion and kind. An apiVersion the server does not
// serve the kind in falls back to the group's preferred version serving
// it: the garbage collector reads and writes metadata only, which every
// version of a kind shares.
func (m *restMapper) resourceFor(apiVersion, kind string) (mapping, error) {
	g, v := ownerReference{APIVersion: apiVersion}.groupVersion()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mp, ok := m.exact[groupVersionKind{g, v, kind}]; ok {
		return mp, nil
	}
	if mp, ok := m.preferred[groupKind{g, kind}]; ok {
		return mp, nil
	}
	return mapping{}, &errRESTMapping{apiVersion, kind}
}

func (m *restMapper) reset(exact map[groupVersionKind]mapping, preferred map[groupKind]mapping) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.exact, m.preferred = exact, preferred
}

// discovered is one read of discovery.
type discovered struct {
	// deletable: the preferred version of every resource that supports
	// delete, list and watch, except the ignored ones.
	deletable map[client.GroupVersionResource]resourceInfo
	exact     map[groupVersionKind]mapping
	preferred map[groupKind]mapping
}

// readDiscovery sorts the server's resource lists, which ServerResources
// returns with each group's preferred version first.
func readDiscovery(lists []wire.APIResourceList) discovered {
	d := discovered{
		deletable: map[client.GroupVersionResource]resourceInfo{},
		exact:     map[groupVersionKind]mapping{},
		preferred: map[groupKind]mapping{},
	}
	seen := map[[2]string]bool{} // group, resource: its preferred version was taken
	for _, l := range lists {
		group, version := ownerReference{APIVersion: l.GroupVersion}.groupVersion()
		for _, r := range l.Resources {
			if strings.Contains(r.Name, "/") || r.Kind == "" {
				continue
			}
			mp := mapping{gvr: client.GroupVersionResource{Group: group, Version: version, Resource: r.Name}, namespaced: r.Namespaced}
			d.exact[groupVersionKind{group, version, r.Kind}] = mp
			if _, ok := d.preferred[groupKind{group, r.Kind}]; !ok {
				d.preferred[groupKind{group, r.Kind}] = mp
			}
			gr := [2]string{group, r.Name}
			if seen[gr] || ignoredResources[gr] || !hasVerbs(r.Verbs, "delete", "list", "watch") {
				continue
			}
			seen[gr] = true
			d.deletable[mp.gvr] = resourceInfo{kind: r.Kind, namespaced: r.Namespaced}
		}
	}
	return d
}

func hasVerbs(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
