package informer

import "github.com/listwatch/listwatch/object"

// DropManagedFields is a Transform for Unstructured objects that removes
// metadata.managedFields, usually the largest part of an object's metadata
// and rarely read by controllers. It edits obj in place.
func DropManagedFields(obj *object.Unstructured) (*object.Unstructured, error) {
	if obj != nil {
		obj.RemoveNested("metadata", "managedFields")
	}
	return obj, nil
}
