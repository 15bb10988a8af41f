// Package object defines what listwatch needs to know about a Kubernetes
// object, and nothing more.
//
// An Object is anything with the metadata accessors below. The method set is
// a strict subset of k8s.io/apimachinery's metav1.Object, so a typed object
// such as *corev1.Pod satisfies it with no code generation, and so does the
// map-based *Unstructured in this package.
//
// The package also owns keys ("namespace/name", or "name" for cluster-scoped
// objects) and the label and field selector languages.
package object

import (
	"errors"
	"strings"
)

// Object is the metadata view of a Kubernetes object that the client, the
// informer and the work queue rely on.
type Object interface {
	GetNamespace() string
	GetName() string
	GetResourceVersion() string
	SetResourceVersion(string)
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}

// ErrInvalidKey is returned by SplitKey for a key with more than one '/'.
var ErrInvalidKey = errors.New("object: invalid key")

// Key returns the store key of obj: "namespace/name", or "name" when the
// object has no namespace. It matches client-go's MetaNamespaceKeyFunc.
func Key(obj Object) string {
	return NewKey(obj.GetNamespace(), obj.GetName())
}

// NewKey builds a key from its parts.
func NewKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// SplitKey is the inverse of Key.
func SplitKey(key string) (namespace, name string, err error) {
	ns, n, found := strings.Cut(key, "/")
	if !found {
		return "", key, nil
	}
	if strings.Contains(n, "/") || ns == "" || n == "" {
		return "", "", ErrInvalidKey
	}
	return ns, n, nil
}
