package server

import "testing"

// TestOwnerReferencesNeedUID: an ownerReference without a uid is kube's
// 422 for built-in kinds (their strategies) and custom resources (the
// custom-resource strategy's metadata validation) alike.
func TestOwnerReferencesNeedUID(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD("Namespaced", "v1"))
	ref := []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}}
	w := widget("w1", "v1")
	w["metadata"].(map[string]any)["ownerReferences"] = ref
	e.expectStatus(422, "Invalid", `Widget.example.com "w1" is invalid: metadata.ownerReferences[0].uid: Required value: must not be empty`,
		"POST", "/apis/example.com/v1/namespaces/default/widgets", w)
	c := cm("c1", nil, nil)
	c["metadata"].(map[string]any)["ownerReferences"] = ref
	e.expectStatus(422, "Invalid", `ConfigMap "c1" is invalid: metadata.ownerReferences[0].uid: Required value: must not be empty`,
		"POST", cmPath, c)

	// On update too.
	e.must(201, "POST", "/apis/example.com/v1/namespaces/default/widgets", widget("w2", "v1"))
	e.expectStatus(422, "Invalid", `Widget.example.com "w2" is invalid: metadata.ownerReferences[0].uid: Required value: must not be empty`,
		"PATCH", "/apis/example.com/v1/namespaces/default/widgets/w2", `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"x"}]}}`,
		"Content-Type", "application/merge-patch+json")
}
