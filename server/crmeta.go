package server

import (
	"bytes"
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
//
// It runs twice on every write, and most fields are already as the
// coercer leaves them, so equal bytes settle a field before sameJSON
// decodes both. Each of these encodes a value equal, as decoded, to the
// coerced one: ObjectMeta's JSON encoding, member by member (the managed
// fields as setManagedFields writes them); the managed fields with each
// entry's members in the order of their names (as stored, and as an
// apply leaves them); the coerced value's own encoding. Only a field
// none of them matches byte for byte is decoded and compared.
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
	encoded := encodedMembers(&om)
	var coerced map[string]any
	for k, raw := range d.meta {
		if e, ok := encoded[k]; ok && bytes.Equal(raw, e) {
			continue
		}
		if k == "managedFields" && bytes.Equal(raw, sortedManagedFields(om.ManagedFields)) {
			continue
		}
		if coerced == nil {
			if coerced, err = runtime.DefaultUnstructuredConverter.ToUnstructured(&om); err != nil {
				return
			}
		}
		v, ok := coerced[k]
		if !ok {
			delete(d.meta, k)
			continue
		}
		nb, err := json.Marshal(v)
		if err != nil || bytes.Equal(raw, nb) || sameJSON(raw, nb) {
			continue
		}
		d.meta[k] = nb
	}
}

// encodedMembers is om's JSON encoding member by member (none if it does
// not encode).
func encodedMembers(om *metav1.ObjectMeta) map[string]json.RawMessage {
	var members map[string]json.RawMessage
	if b, err := json.Marshal(om); err == nil {
		_ = json.Unmarshal(b, &members)
	}
	return members
}

// sortedManagedFieldsEntry is metav1.ManagedFieldsEntry with its members
// in the order of their names, as an unstructured value encodes them.
type sortedManagedFieldsEntry struct {
	APIVersion  string                            `json:"apiVersion,omitempty"`
	FieldsType  string                            `json:"fieldsType,omitempty"`
	FieldsV1    *metav1.FieldsV1                  `json:"fieldsV1,omitempty"`
	Manager     string                            `json:"manager,omitempty"`
	Operation   metav1.ManagedFieldsOperationType `json:"operation,omitempty"`
	Subresource string                            `json:"subresource,omitempty"`
	Time        *metav1.Time                      `json:"time,omitempty"`
}

// sortedManagedFields encodes entries with each one's members in the
// order of their names: nil for none (ObjectMeta omits them) and if they
// do not encode.
func sortedManagedFields(entries []metav1.ManagedFieldsEntry) []byte {
	if len(entries) == 0 {
		return nil
	}
	sorted := make([]sortedManagedFieldsEntry, len(entries))
	for i, e := range entries {
		sorted[i] = sortedManagedFieldsEntry{APIVersion: e.APIVersion, FieldsType: e.FieldsType, FieldsV1: e.FieldsV1,
			Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource, Time: e.Time}
	}
	b, err := json.Marshal(sorted)
	if err != nil {
		return nil
	}
	return b
}

// sameJSON reports whether the JSON values a and b are equal as decoded.
func sameJSON(a, b []byte) bool {
	var av, bv any
	return json.Unmarshal(a, &av) == nil && json.Unmarshal(b, &bv) == nil && reflect.DeepEqual(av, bv)
}
