package informer

import (
	"reflect"

	"github.com/listwatch/listwatch/object"
)

// DropManagedFields is a Transform for Unstructured objects that removes
// metadata.managedFields, usually the largest part of an object's metadata
// and rarely read by controllers. It edits obj in place.
func DropManagedFields(obj *object.Unstructured) (*object.Unstructured, error) {
	if obj != nil {
		obj.RemoveNested("metadata", "managedFields")
	}
	return obj, nil
}

// DropManagedFieldsOf is DropManagedFields for any object type: for
// *object.Unstructured it removes metadata.managedFields, for a typed
// object (a pointer to a struct with a ManagedFields field, directly or
// through an embedded ObjectMeta, such as *corev1.Pod) it sets that field
// to nil. It edits obj in place and is a no-op for other types. Opt in
// with Options.Transform; the informer never drops fields by default.
func DropManagedFieldsOf[T object.Object](obj T) (T, error) {
	if u, ok := any(obj).(*object.Unstructured); ok {
		_, err := DropManagedFields(u)
		return obj, err
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj, nil
	}
	f := v.Elem().FieldByName("ManagedFields")
	if f.IsValid() && f.CanSet() && f.Kind() == reflect.Slice {
		f.SetZero()
	}
	return obj, nil
}
