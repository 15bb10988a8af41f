package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// gvr names a served resource.
type gvr struct{ group, version, resource string }

// registry is the set of served resources, the built-ins, fixed at New,
// and those of the CRDs currently established, which change while the
// server runs, and it owns each one's reader (see Readers). A resource
// and its reader are published together: a request that finds a
// resource finds the reader of that definition of it.
type registry struct {
	readers Readers

	mu sync.RWMutex
	// byGVR holds every served resource; built-ins are never removed, and
	// no two resources of different owners share a group and plural or a
	// storage prefix. guarded by mu
	byGVR map[gvr]*resource
	// crds maps the name of each served CRD to what it serves; a CRD that
	// serves nothing has no entry. guarded by mu
	crds map[string]*crdServing
	// crdRevs maps a CRD name to the revision of the last change of it
	// applied (a write, or a delete), so that a change seen late (the CRD
	// watch lags behind this server's own writes, which are applied at
	// once) never undoes a newer one. forgetCRDsBefore drops the entries
	// of deleted CRDs. guarded by mu
	crdRevs map[string]int64
	// gen counts changes to what is served, so that documents derived
	// from the registry (aggregated discovery) know when to rebuild.
	// guarded by mu
	gen uint64
}

// crdServing is what one CRD serves: its resources (one per served
// version) and the reader they share.
type crdServing struct {
	keys []gvr
	// def identifies what the reader depends on (prefix, scope, served
	// versions, selectable fields); an update that keeps it keeps the
	// reader and its watches.
	def    string
	reader ResourceReader
}

func newRegistry(readers Readers) *registry {
	reg := &registry{readers: readers, byGVR: map[gvr]*resource{}, crds: map[string]*crdServing{}, crdRevs: map[string]int64{}}
	for _, r := range builtinResources() {
		r.reader = readers.Open(readerSpec(r.prefix(""), r.fields, r.fieldAbsent))
		reg.addLocked(r)
	}
	for _, r := range append(identityResources(), coreSpecialResources()...) { // bindings.go
		reg.addLocked(r) // virtual: no reader
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

// setCRD replaces the resources served for the CRD name with rs (one per
// served version, all with one storage prefix), as of revision rev; an
// empty rs removes them. A change older than the last one applied for
// name is ignored.
// The CRD's reader is kept when its definition is unchanged, else a new
// one is opened; the reader no longer used is closed before setCRD
// returns, which ends its watches. A CRD that would shadow a built-in or
// another CRD (same group and plural, or same storage prefix) is not
// served, and setCRD returns errShadowing.
func (reg *registry) setCRD(name string, rev int64, rs []*resource) error {
	var unused ResourceReader
	defer func() {
		if unused != nil {
			unused.Close()
		}
	}()
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if rev < reg.crdRevs[name] {
		return nil
	}
	reg.crdRevs[name] = rev
	reg.gen++
	old := reg.crds[name]
	if old != nil {
		for _, k := range old.keys {
			delete(reg.byGVR, k)
		}
		delete(reg.crds, name)
		unused = old.reader
	}
	if len(rs) == 0 {
		return nil
	}
	if err := reg.shadowsLocked(rs); err != nil {
		return err
	}
	def, spec := crdReaderDef(rs)
	serving := &crdServing{def: def}
	if old != nil && old.def == def {
		serving.reader, unused = old.reader, nil
	} else {
		serving.reader = reg.readers.Open(spec)
	}
	for _, r := range rs {
		r.reader = serving.reader
		reg.addLocked(r)
		serving.keys = append(serving.keys, gvr{r.group, r.version, r.plural})
	}
	reg.crds[name] = serving
	return nil
}

// staleCRD reports whether a change of the CRD name at revision rev is
// older than the last one applied (setCRD would ignore it).
func (reg *registry) staleCRD(name string, rev int64) bool {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return rev < reg.crdRevs[name]
}

// errShadowing: a CRD names a resource that is already served, built in
// or by another CRD.
var errShadowing = errors.New("server: the CRD would shadow a served resource")

// shadowsLocked reports whether rs would share a group and plural, or a
// storage prefix, with a resource served now. reg.mu is held, and rs's
// own CRD has been removed.
func (reg *registry) shadowsLocked(rs []*resource) error {
	for _, r := range rs {
		for _, cur := range reg.byGVR {
			if (cur.group == r.group && cur.plural == r.plural) || cur.prefix("") == r.prefix("") {
				return fmt.Errorf("%w: %s", errShadowing, cur.gr())
			}
		}
	}
	return nil
}

// isBuiltinPrefix reports whether prefix is the storage prefix of a
// built-in resource, which no CRD cleanup may delete.
func (reg *registry) isBuiltinPrefix(prefix string) bool {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	for _, r := range reg.byGVR {
		if r.crd == "" && r.prefix("") == prefix {
			return true
		}
	}
	return false
}

// crdReaderDef returns the identity of what the reader of a CRD's
// resources depends on, and its spec: the selectable fields are those of
// every served version, since all versions share one stored object.
func crdReaderDef(rs []*resource) (string, ReaderSpec) {
	fields := map[string][]string{}
	var versions []string
	for _, r := range rs {
		versions = append(versions, r.version)
		for f, p := range r.fields {
			fields[f] = p
		}
	}
	names := slices.Sorted(maps.Keys(fields))
	slices.Sort(versions)
	prefix := rs[0].prefix("")
	def := fmt.Sprintf("%s namespaced=%t versions=%q fields=%q", prefix, rs[0].namespaced, versions, names)
	return def, readerSpec(prefix, fields, nil)
}

// forgetCRDsBefore drops the revisions kept for CRDs not served whose
// last change is at or before rev: a list at rev has shown them gone,
// and every change still to come is newer.
func (reg *registry) forgetCRDsBefore(rev int64) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for name, r := range reg.crdRevs {
		if _, served := reg.crds[name]; !served && r <= rev {
			delete(reg.crdRevs, name)
		}
	}
}

// hasCRD reports whether the CRD name is currently served.
func (reg *registry) hasCRD(name string) bool {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	_, ok := reg.crds[name]
	return ok
}

// generation returns a number that changes whenever what is served does.
func (reg *registry) generation() uint64 {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.gen
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
		if !r.namespaced || r.virtual {
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
		if r.group == "" || r.undiscovered {
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
	slices.SortStableFunc(groups, compareGroups)
	return groups, versions
}

// kubeGroupOrder is the order in which kube-apiserver v1.37 lists its
// built-in groups in /apis (its APIService group priorities, highest
// first; see testdata/kube-v1.37.2/apis.json).
var kubeGroupOrder = []string{
	"apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
	"authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
	"networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io",
	"admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
	"coordination.k8s.io", "node.k8s.io", "discovery.k8s.io", "resource.k8s.io",
	"flowcontrol.apiserver.k8s.io", "storagemigration.k8s.io",
}

// compareGroups orders groups as kube lists them: the built-in groups in
// kubeGroupOrder, then the groups of CRDs (whose APIServices kube gives
// one lower priority) by name.
func compareGroups(a, b string) int {
	ia, ib := slices.Index(kubeGroupOrder, a), slices.Index(kubeGroupOrder, b)
	switch {
	case ia >= 0 && ib >= 0:
		return ia - ib
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return strings.Compare(a, b)
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
