package client

import "context"

// Apply is a server-side apply: the server merges data into the named
// object in r's namespace (or into its subresource, such as its status),
// creating the object when it does not exist, and records that the field
// manager owns exactly the fields data sets. A later apply by the same
// manager that leaves out a field it owned removes that field.
//
// data is YAML or JSON of the object's apiVersion, kind, metadata.name
// and only the fields the caller means to own:
//
//	cms.Apply(ctx, "settings", []byte(`{"apiVersion":"v1","kind":"ConfigMap",
//		"metadata":{"name":"settings"},"data":{"mode":"fast"}}`), client.FieldOwner("my-controller"))
//
// Do not marshal a whole typed object (json.Marshal of a *corev1.Pod):
// its fields without omitempty are sent at their zero values (a nil
// map or slice as null, a struct as {}, creationTimestamp: null), and the
// apply then owns those fields with those values: it clears or fights
// over what other managers set (client-go has apply configurations, all
// pointers, for this). Build data from a map, an Unstructured, or a
// struct of your own with omitempty everywhere.
//
// opts must include a FieldOwner (kube answers 422 "fieldManager:
// Required value: is required for apply patch" without one). A field that
// another manager owns with a different value fails IsConflict: 409,
// reason Conflict, one cause of type FieldManagerConflict per field,
// naming the field and its manager, unless ForceOwnership takes the field
// over. The body is always YAML/JSON, in a protobuf Resource too; the
// answer is decoded as any other (protobuf when the server sends it).
func (r *Resource[T]) Apply(ctx context.Context, name string, data []byte, opts ...WriteOption) (T, error) {
	return r.Patch(ctx, name, ApplyPatch, data, opts...)
}
