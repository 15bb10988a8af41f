// Package patch applies the three patch formats the Kubernetes API accepts
// on PATCH: JSON merge patch (RFC 7386, application/merge-patch+json), JSON
// patch (RFC 6902, application/json-patch+json) and strategic merge patch
// (application/strategic-merge-patch+json).
//
// There are three functions and one interface. MergePatch, JSONPatch and
// StrategicMergePatch each take the stored object as JSON and the request
// body, and return the patched object as JSON. A Schema tells
// StrategicMergePatch which lists merge and on what key; SchemaFor returns the
// schemas of the built-in kinds, and false for custom resources, which
// Kubernetes does not let you strategic-merge-patch.
//
//	MergePatch(`{"metadata":{"labels":{"a":"1","b":"2"}}}`, `{"metadata":{"labels":{"b":null}}}`)
//	  → {"metadata":{"labels":{"a":"1"}}}
//	JSONPatch(`{"spec":{"replicas":1}}`, `[{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":3}]`)
//	  → {"spec":{"replicas":3}}
//	StrategicMergePatch(`{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"1"}]}}`,
//	                    `{"spec":{"containers":[{"name":"b","image":"2"}]}}`, pod)
//	  → {"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}]}}
//
// # Guarantees
//
//   - Numbers keep their text: 10000000000000001 and 1.50 come out as they
//     went in. Objects come out with sorted keys and no HTML escaping.
//   - A document is never left half patched: functions return a new encoding
//     or an error.
//   - Hostile input fails fast with ErrInvalidPatch: nesting beyond MaxDepth
//     (checked by a linear scan before decoding), JSON patches with more than
//     MaxOperations operations (refused while reading), and "copy" chains that
//     would duplicate more than MaxCopyBytes.
//   - Errors map onto HTTP statuses with errors.Is; see the sentinels.
//
// # Differences from the implementations kube-apiserver uses
//
// The tests compare this package with gopkg.in/evanphx/json-patch.v4 and
// k8s.io/apimachinery/pkg/util/strategicpatch over randomized inputs. Where
// they differ, this package follows the RFCs or keeps the result free of
// directives, deliberately:
//
//   - Merge patch: nulls inside arrays are kept (RFC 7386 copies arrays);
//     evanphx removes object members set to null inside arrays when the
//     target field is absent. A patch that is not an object is refused rather
//     than replacing the document.
//   - JSON patch: "replace", "test" and "copy"/"move" "from" must name an
//     existing location (RFC 6902); evanphx lets replace create a member,
//     test null pass on a missing path, and copy a missing member as null.
//     Negative array indices are refused (evanphx accepts them). A missing
//     "op", "path" or "value" is a 400, not a 422.
//   - Strategic merge patch: where the document has nothing (a new field, a
//     new list element, a list or object replaced by $patch: replace)
//     Kubernetes copies the patch verbatim, leaving directives such as
//     "$setElementOrder/x" or {"$patch":"delete"} elements and nulls in the
//     object (its typed decoding drops some of them later). This package
//     applies the patch to emptiness instead, so no directive and no deleting
//     null is ever stored. $patch: merge is accepted as the default (Kubernetes
//     rejects it). With both "$deleteFromPrimitiveList/f" and f in one patch,
//     deletions apply first (Kubernetes' order depends on map iteration).
//     Fields the schema does not know merge by default instead of failing, so
//     unknown fields kept in stored objects can be patched. Merge keys compare
//     by value (1 and 1.0 match, as float64 comparison does in Kubernetes),
//     and lists may mix primitive types.
//
// # Caveats
//
// The built-in schemas follow the patchStrategy tags of k8s.io/api v0.37,
// checked by a test. Untagged lists are replaced even where intuition says
// otherwise: tolerations, envFrom, ServiceAccount imagePullSecrets and
// Namespace spec.finalizers.
package patch
