package informer

import "github.com/listwatch/listwatch/object"

// IndexFunc returns the index values of an object. It must be a pure
// function of the object: the store calls it again on the old object to
// unindex it.
type IndexFunc[T object.Object] func(obj T) []string

// Indexers name IndexFuncs.
type Indexers[T object.Object] map[string]IndexFunc[T]

const (
	// IndexNamespace indexes objects by namespace ("" for cluster-scoped).
	IndexNamespace = "namespace"
	// IndexLabel indexes objects by every label they carry; look up with
	// LabelIndexValue(key, value).
	IndexLabel = "label"
)

// NamespaceIndexFunc is the IndexNamespace index.
func NamespaceIndexFunc[T object.Object](obj T) []string {
	return []string{obj.GetNamespace()}
}

// LabelIndexFunc is the IndexLabel index.
func LabelIndexFunc[T object.Object](obj T) []string {
	labels := obj.GetLabels()
	if len(labels) == 0 {
		return nil
	}
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, LabelIndexValue(k, v))
	}
	return out
}

// LabelIndexValue is the IndexLabel value of label key=value. Label keys
// cannot contain '=', so the encoding is unambiguous.
func LabelIndexValue(key, value string) string { return key + "=" + value }
