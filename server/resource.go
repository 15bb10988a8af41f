package server

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// resource is one served group/version/resource: how its objects are named,
// keyed, selected and shown. Values are immutable once registered; a CRD
// update registers new ones.
type resource struct {
	group, version string
	plural         string
	singular       string
	kind, listKind string
	shortNames     []string
	categories     []string
	namespaced     bool
	// keyGroup is the group part of storage keys: "" for the core group
	// and the built-ins kube stores without one (leases), else the group.
	keyGroup string
	// keyName is the resource part of storage keys when kube's differs
	// from the plural (nodes are stored as "minions"); "" for the plural.
	keyName string
	// deprecated is the warning kube gives on every request to a
	// deprecated built-in (v1 Endpoints); "" for the others.
	deprecated string
	// fields are the selectable fields beyond metadata.name and
	// metadata.namespace, each with its path in the object.
	fields map[string][]string
	// fieldAbsent is, for the fields that have one, the value kube's
	// attributes give a field missing from an object ("false", "0").
	fieldAbsent map[string]string
	// columns are the Table columns after NAME (AGE is appended last).
	columns []column
	// crd is the name of the defining CustomResourceDefinition, "" for
	// built-ins. Custom resources differ from built-ins where kube does:
	// updates need a resourceVersion, strategic merge patch is refused,
	// generation is kept.
	crd string
	// crdValue is the stored CRD that defines a custom resource, from
	// which its OpenAPI documents are built (openapi.go); nil for
	// built-ins.
	crdValue []byte
	// terminating: the CRD is being deleted; creates are refused
	// (kube's forbidCreateAdmission). undiscovered: the CRD is served
	// (its names accepted) but not established, so not in discovery.
	terminating, undiscovered bool
	// rewriteVersion: the CRD has several versions, so stored objects
	// may carry another apiVersion and are relabelled on the way out
	// (conversion strategy None), read as that version's schema and
	// then this one's have them (readStored).
	rewriteVersion bool
	// conv converts the objects of a CRD whose conversion strategy is
	// Webhook (crconvert.go); nil otherwise.
	conv *crConversion
	// converted: the resource is stored as another version or group
	// (convert.go): values are converted on the way out, not relabelled.
	converted bool
	// hasStatus: the resource serves a status subresource, whose writes
	// change only .status.
	hasStatus bool
	// subresources are the other subresources served that update the
	// object with a strategy of their own (typedKind.subs).
	subresources []string
	// scale is the scale subresource of a custom resource, nil if none
	// (scale.go); strategy is kube's strategy for a custom resource
	// (crstrategy.go).
	scale    *crScale
	strategy crPreparer
	// schema is what the CRD version's schema decides for its objects
	// (crschema.go); nil for built-ins and versions without a schema.
	schema *crSchema
	// versionSchemas are the schemas of every version of the CRD, served
	// or not, by name (those without one absent): kube's decoder coerces
	// a body by the version its apiVersion names (bodySchema).
	versionSchemas map[string]*crSchema
	// storageAPIVersion is the apiVersion a CRD with several versions
	// stores its objects in when it is not this resource's ("" when it
	// is, or for a built-in): a write is relabelled to it and pruned by
	// its schema (toStorage).
	storageAPIVersion string
	// reader serves LIST and WATCH of the resource's objects; the
	// registry sets it when it registers the resource, and closes it when
	// this definition of the resource is replaced or removed.
	reader ResourceReader
	// virtual: the resource is create-only and never stored (the identity
	// APIs, identity.go); it has no reader.
	virtual bool
	// handler answers every request on a virtual resource that is not a
	// review (bindings, componentstatuses: bindings.go); verbList, if
	// set, are its discovery verbs.
	handler  func(*call, *request.Info) error
	verbList []string
	// subCreate are the create-only subresources (pods/binding) and what
	// answers them.
	subCreate map[string]func(*call) error
}

// isCRDs reports whether r is the built-in CustomResourceDefinition
// resource.
func (r *resource) isCRDs() bool {
	return r.crd == "" && r.group == groupCRD && r.plural == "customresourcedefinitions"
}

func (r *resource) gr() wire.GroupResource {
	return wire.GroupResource{Group: r.group, Resource: r.plural}
}

// apiVersion is the apiVersion of the resource's objects: "v1" or "g/v".
func (r *resource) apiVersion() string {
	if r.group == "" {
		return r.version
	}
	return r.group + "/" + r.version
}

// prefix is the storage prefix of the resource's objects in namespace ns,
// or of all of them when ns is "". It ends in '/', so no resource's prefix
// is a prefix of another's.
func (r *resource) prefix(ns string) string {
	var b strings.Builder
	b.WriteString("/registry/")
	if r.keyGroup != "" {
		b.WriteString(r.keyGroup)
		b.WriteByte('/')
	}
	if r.keyName != "" {
		b.WriteString(r.keyName)
	} else {
		b.WriteString(r.plural)
	}
	b.WriteByte('/')
	if ns != "" && r.namespaced {
		b.WriteString(ns)
		b.WriteByte('/')
	}
	return b.String()
}

func (r *resource) key(ns, name string) string { return r.prefix(ns) + name }

func (r *resource) verbs() []string {
	if r.verbList != nil {
		return r.verbList
	}
	if r.virtual {
		return []string{"create"}
	}
	if r.plural == "namespaces" && r.group == "" {
		return []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	}
	return []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// qualifiedKind is "Kind" for the core group, "Kind.group" otherwise, as
// kube writes it in Invalid messages.
func (r *resource) qualifiedKind() string {
	if r.group == "" {
		return r.kind
	}
	return r.kind + "." + r.group
}

// runKey is the key of the run memos (storage.RunMemo) that hold runs of
// this resource's objects as format ("json", "proto") writes them in a
// list; "" for a custom resource, whose objects a list writes through its
// CRD's current schema, which may change under unchanged objects.
func (r *resource) runKey(format string) string {
	if r.crd != "" {
		return ""
	}
	return format + " " + r.group + "/" + r.version + "/" + r.plural
}

// served is a stored value of r (with its resourceVersion; key and rev
// name it, key "" for one not stored) as r's version serves it: converted
// by the CRD's webhook when it has one, else relabelled.
func (r *resource) served(key string, rev int64, value []byte) ([]byte, error) {
	if r.conv != nil {
		v, err := r.conv.one(key, rev, value, r.apiVersion())
		if err != nil {
			return nil, readError(err)
		}
		value = v
	}
	return r.relabel(value), nil
}

// servedPage is a page of stored objects of r in r's version: the page's
// slice as it is, unless the CRD's webhook converts them.
func (r *resource) servedPage(kvs []storage.KV) ([]storage.KV, error) {
	if r.conv == nil {
		return kvs, nil
	}
	out, err := r.conv.convertKVs(kvs, r.apiVersion())
	var ce *convError
	if errors.As(err, &ce) {
		// kube then lists from storage, converting every object again
		// (its watch cache cannot convert the one that failed): each
		// object not in this version fails, named in the page's order.
		failed := &convError{err: ce.err}
		for _, kv := range kvs {
			if valueAPIVersion(kv.Value) != r.apiVersion() {
				failed.items = append(failed.items, convItem{key: kv.Key, rev: kv.Revision})
			}
		}
		err = failed
	}
	if err != nil {
		return nil, listReadError(r.gr(), err)
	}
	return out, nil
}

// relabel returns value with its top-level apiVersion set to r's, for a
// CRD serving several versions; objects are stored with apiVersion first
// (see encodeObject), so this is a prefix splice, not a decode.
func (r *resource) relabel(value []byte) []byte {
	value = r.readStored(value) // kube's decoding of stored custom resources
	if r.converted {
		return r.toServed(value)
	}
	if !r.rewriteVersion {
		return value
	}
	const head = `{"apiVersion":"`
	if !strings.HasPrefix(string(value), head) {
		// A custom resource with a member whose name sorts before
		// apiVersion (keyOrdered).
		return withTopString(value, "apiVersion", r.apiVersion())
	}
	end := strings.IndexByte(string(value[len(head):]), '"')
	if end < 0 || string(value[len(head):len(head)+end]) == r.apiVersion() {
		return value
	}
	out := make([]byte, 0, len(value)+len(r.apiVersion()))
	out = append(out, head...)
	out = append(out, r.apiVersion()...)
	return append(out, value[len(head)+end:]...)
}

// readStored is a stored custom resource as r's version reads it, as
// kube's storage codec decodes it: pruned and defaulted by the schema of
// the version it is stored in, then, when that is not r's (conversion
// None relabels), pruned by r's schema, without r's defaults. Only a CRD
// with several versions looks at the stored apiVersion.
//
// Under conversion Webhook the conversion reads (crConversion.convert):
// value, converted or not, was read there already.
func (r *resource) readStored(value []byte) []byte {
	if r.conv != nil {
		return value
	}
	if len(r.versionSchemas) > 1 && r.schema != nil {
		if av := valueAPIVersion(value); av != r.apiVersion() {
			if gv, err := schema.ParseGroupVersion(av); err == nil && gv.Group == r.group {
				return r.schema.readStoredFrom(value, r.storedSchema(gv.Version))
			}
		}
	}
	return r.schema.readStored(value)
}

// storedSchema is the schema of version v of r's CRD, by which kube's
// storage codec coerces an object stored in it: one the CRD does not
// have (or without a schema) keeps only apiVersion, kind and metadata.
func (r *resource) storedSchema(v string) *crSchema {
	if cs, ok := r.versionSchemas[v]; ok {
		return cs
	}
	return &crSchema{preserveUnknownFields: r.schema.preserveUnknownFields}
}
