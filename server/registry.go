package server

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// gvr names a served resource.
type gvr struct{ group, version, resource string }

// registry is the set of served resources: the built-ins, fixed at New,
// and those of the CRDs currently established, which change while the
// server runs.
type registry struct {
	mu sync.RWMutex
	// byGVR holds every served resource; built-ins are never removed.
	// guarded by mu
	byGVR map[gvr]*resource
	// crds maps a CRD name to the gvrs it serves. guarded by mu
	crds map[string][]gvr
}

func newRegistry() *registry {
	reg := &registry{byGVR: map[gvr]*resource{}, crds: map[string][]gvr{}}
	for _, r := range builtinResources() {
		reg.addLocked(r)
	}
	return reg
}

func (reg *registry) addLocked(r *resource) {
	if r.listKind == "" {
		r.listKind = r.kind + "List"
	}
	reg.byGVR[gvr{r.group, r.version, r.plural}] = r
}

func (reg *registry) lookup(group, version, plural string) (*resource, bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	r, ok := reg.byGVR[gvr{group, version, plural}]
	return r, ok
}

// setCRD replaces the resources served for the CRD name; an empty rs
// removes them. It refuses to shadow a built-in.
func (reg *registry) setCRD(name string, rs []*resource) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, k := range reg.crds[name] {
		delete(reg.byGVR, k)
	}
	delete(reg.crds, name)
	var keys []gvr
	for _, r := range rs {
		k := gvr{r.group, r.version, r.plural}
		if old, ok := reg.byGVR[k]; ok && old.crd != name {
			continue
		}
		reg.addLocked(r)
		keys = append(keys, k)
	}
	if len(keys) > 0 {
		reg.crds[name] = keys
	}
}

// hasCRD reports whether the CRD name is currently served.
func (reg *registry) hasCRD(name string) bool {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	_, ok := reg.crds[name]
	return ok
}

// all returns every served resource, sorted by group, version, plural.
func (reg *registry) all() []*resource {
	reg.mu.RLock()
	out := make([]*resource, 0, len(reg.byGVR))
	for _, r := range reg.byGVR {
		out = append(out, r)
	}
	reg.mu.RUnlock()
	slices.SortFunc(out, func(a, b *resource) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		if c := compareVersions(a.version, b.version); c != 0 {
			return c
		}
		return strings.Compare(a.plural, b.plural)
	})
	return out
}

// namespacedPrefixes returns one storage prefix per distinct namespaced
// resource (versions of one CRD share a prefix) for namespace ns.
func (reg *registry) namespacedPrefixes(ns string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range reg.all() {
		if !r.namespaced {
			continue
		}
		p := r.prefix(ns)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// groupVersions returns each served group's versions, preferred first, in
// the order /apis lists the groups (core excluded).
func (reg *registry) groupVersions() (groups []string, versions map[string][]string) {
	versions = map[string][]string{}
	for _, r := range reg.all() {
		if r.group == "" {
			continue
		}
		vs := versions[r.group]
		if !slices.Contains(vs, r.version) {
			if vs == nil {
				groups = append(groups, r.group)
			}
			versions[r.group] = append(vs, r.version)
		}
	}
	return groups, versions
}

// compareVersions orders Kubernetes versions by priority: GA before beta
// before alpha, higher numbers first, then anything else by name. It
// returns a negative number when a has the higher priority.
func compareVersions(a, b string) int {
	ka, kb := versionKey(a), versionKey(b)
	switch {
	case ka.class != kb.class:
		return ka.class - kb.class
	case ka.major != kb.major:
		return kb.major - ka.major
	case ka.minor != kb.minor:
		return kb.minor - ka.minor
	}
	return strings.Compare(a, b)
}

type vkey struct{ class, major, minor int }

func versionKey(v string) vkey {
	if !strings.HasPrefix(v, "v") {
		return vkey{class: 3}
	}
	rest := v[1:]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	major, err := strconv.Atoi(rest[:i])
	if err != nil {
		return vkey{class: 3}
	}
	rest = rest[i:]
	class := 0
	switch {
	case rest == "":
		return vkey{class: 0, major: major}
	case strings.HasPrefix(rest, "beta"):
		class, rest = 1, rest[4:]
	case strings.HasPrefix(rest, "alpha"):
		class, rest = 2, rest[5:]
	default:
		return vkey{class: 3}
	}
	minor, err := strconv.Atoi(rest)
	if err != nil {
		return vkey{class: 3}
	}
	return vkey{class: class, major: major, minor: minor}
}

func (reg *registry) crdNames() []string {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	out := make([]string, 0, len(reg.crds))
	for n := range reg.crds {
		out = append(out, n)
	}
	return out
}
