package server

import (
	"encoding/json"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// kube-apiserver decodes a custom resource, in a request body, a patch's
// result and every read from etcd, through the apiextensions coercer
// (apiextensions-apiserver's schema/objectmeta), which turns its metadata
// into an ObjectMeta and back: what ObjectMeta's encoding omits is gone.
// So are empty labels, annotations, finalizers and ownerReferences, empty
// strings (generateName, namespace, uid…), a zero generation and nulls;
// a null label or annotation value is "", an owner reference's null
// controller or blockOwnerDeletion is dropped, and times lose their
// fractions. A built-in kind's metadata goes through its typed encoding
// instead (encodeInto), with the same effect.

// coerceCustomMeta does to d's metadata, a custom resource's as decoded
// (decodeMeta: known fields only), what kube's coercer does. A field it
// leaves equal keeps its bytes as written. Metadata that does not decode
// into ObjectMeta is left as it is, for validation to refuse.
func coerceCustomMeta(d *doc) {
	if len(d.meta) == 0 {
		return
	}
	b, err := json.Marshal(d.meta)
	if err != nil {
		return
	}
	var om metav1.ObjectMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &om); err != nil {
		return
	}
	coerced, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&om)
	if err != nil {
		return
	}
	for k, raw := range d.meta {
		v, ok := coerced[k]
		if !ok {
			delete(d.meta, k)
			continue
		}
		nb, err := json.Marshal(v)
		if err != nil || sameJSON(raw, nb) {
			continue
		}
		d.meta[k] = nb
	}
}

// sameJSON reports whether the JSON values a and b are equal as decoded.
func sameJSON(a, b []byte) bool {
	var av, bv any
	return json.Unmarshal(a, &av) == nil && json.Unmarshal(b, &bv) == nil && reflect.DeepEqual(av, bv)
}
