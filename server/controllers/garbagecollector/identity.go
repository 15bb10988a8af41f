package garbagecollector

import (
	"fmt"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/object"
)

// The two finalizers the API server adds for a propagation policy and
// this controller removes.
const (
	finalizerOrphan     = "orphan"
	finalizerForeground = "foregroundDeletion"
)

// ownerReference is the part of a metadata.ownerReferences entry the graph
// needs. Writes never re-encode it: they filter the live object's own
// entries, so fields this type does not know survive.
type ownerReference struct {
	APIVersion         string
	Kind               string
	Name               string
	UID                string
	BlockOwnerDeletion bool
}

// coordinates is the reference without blockOwnerDeletion: what must match
// between a reference and the object it names.
func (r ownerReference) coordinates() ownerReference {
	r.BlockOwnerDeletion = false
	return r
}

// objectReference identifies a node: an object's coordinates and, for a
// namespaced object (or a virtual owner assumed to be in its dependent's
// namespace), its namespace.
type objectReference struct {
	ownerReference
	Namespace string
}

func (r objectReference) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// group and version of the reference's apiVersion ("v1" is the core group).
func (r ownerReference) groupVersion() (group, version string) {
	if g, v, ok := strings.Cut(r.APIVersion, "/"); ok {
		return g, v
	}
	return "", r.APIVersion
}

// objectMeta is what the graph reads from an object.
type objectMeta struct {
	Namespace, Name, UID string
	ResourceVersion      string
	Owners               []ownerReference
	Finalizers           []string
	BeingDeleted         bool // deletionTimestamp is set
}

func (m objectMeta) hasFinalizer(f string) bool { return slices.Contains(m.Finalizers, f) }

// deletingDependents: a foreground deletion is waiting for the dependents.
func (m objectMeta) deletingDependents() bool {
	return m.BeingDeleted && m.hasFinalizer(finalizerForeground)
}

// metaOf reads the metadata the graph needs; missing or mistyped fields
// read as empty, as the server would never send them.
func metaOf(u *object.Unstructured) objectMeta {
	m := objectMeta{
		Namespace:       u.GetNamespace(),
		Name:            u.GetName(),
		UID:             u.GetUID(),
		ResourceVersion: u.GetResourceVersion(),
	}
	if ts, ok := u.Nested("metadata", "deletionTimestamp"); ok && ts != nil && ts != "" {
		m.BeingDeleted = true
	}
	if fs, ok := u.Nested("metadata", "finalizers"); ok {
		list, _ := fs.([]any)
		for _, f := range list {
			if s, ok := f.(string); ok {
				m.Finalizers = append(m.Finalizers, s)
			}
		}
	}
	m.Owners = ownersOf(u)
	return m
}

// ownersOf reads metadata.ownerReferences.
func ownersOf(u *object.Unstructured) []ownerReference {
	refs, _ := rawOwners(u)
	var out []ownerReference
	for _, r := range refs {
		out = append(out, ownerFromRaw(r))
	}
	return out
}

// rawOwners returns the object's ownerReferences entries as decoded.
func rawOwners(u *object.Unstructured) ([]map[string]any, bool) {
	v, ok := u.Nested("metadata", "ownerReferences")
	if !ok {
		return nil, false
	}
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, true
}

func ownerFromRaw(m map[string]any) ownerReference {
	str := func(k string) string { s, _ := m[k].(string); return s }
	block, _ := m["blockOwnerDeletion"].(bool)
	return ownerReference{
		APIVersion:         str("apiVersion"),
		Kind:               str("kind"),
		Name:               str("name"),
		UID:                str("uid"),
		BlockOwnerDeletion: block,
	}
}

// metadataOnly is the informers' Transform: it keeps apiVersion, kind and
// metadata without managedFields, which is all the graph reads, so the
// caches hold about what kube's metadata-only informers hold.
func metadataOnly(u *object.Unstructured) (*object.Unstructured, error) {
	out := &object.Unstructured{Object: map[string]any{}}
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := u.Object[k]; ok {
			out.Object[k] = v
		}
	}
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		kept := make(map[string]any, len(md))
		for k, v := range md {
			if k != "managedFields" {
				kept[k] = v
			}
		}
		out.Object["metadata"] = kept
	}
	return out, nil
}

// crdSummary is the Transform of the CRD monitor: metadataOnly plus the
// group, plural and conditions, which tell the discovery loop which
// resources an established CRD serves.
func crdSummary(u *object.Unstructured) (*object.Unstructured, error) {
	out, _ := metadataOnly(u)
	if g, ok := u.Nested("spec", "group"); ok {
		out.SetNested(g, "spec", "group")
	}
	if p, ok := u.Nested("spec", "names", "plural"); ok {
		out.SetNested(p, "spec", "names", "plural")
	}
	if c, ok := u.Nested("status", "conditions"); ok {
		out.SetNested(c, "status", "conditions")
	}
	return out, nil
}

// crdServes returns the group and plural of an established CRD not being
// deleted, or ok false.
func crdServes(u *object.Unstructured) (group, plural string, ok bool) {
	if metaOf(u).BeingDeleted {
		return "", "", false
	}
	conds, _ := u.Nested("status", "conditions")
	list, _ := conds.([]any)
	established := false
	for _, c := range list {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			established = true
		}
	}
	g, _ := u.Nested("spec", "group")
	p, _ := u.Nested("spec", "names", "plural")
	group, _ = g.(string)
	plural, _ = p.(string)
	return group, plural, established && group != "" && plural != ""
}
