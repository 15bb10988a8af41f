package e2e

import (
	"net/http"
	"testing"
)

// TestKubeCustomResourceMetadataSameAsOurs: kube-apiserver decodes a
// custom resource's metadata through ObjectMeta (apiextensions' objectmeta
// coercer), so empty labels, annotations, finalizers and ownerReferences,
// empty strings and nulls are gone, a null label value is "", whether the
// object was created, updated, merge- or JSON-patched or applied. The
// same writes go to kube and to serve: the answers, GETs, a list and the
// watch events must be the same (server-chosen values masked).
func TestKubeCustomResourceMetadataSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	const group = "crmeta.example.com"
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"knobs.` + group + `"},
		"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"knobs","singular":"knob","kind":"Knob"},
		"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
			"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	knobs := "/apis/" + group + "/v1/namespaces/" + ns + "/knobs"
	for _, c := range []*rawClient{kube, ours} {
		if code, m := c.do("POST", crds, jsonCT, crd); code != http.StatusCreated {
			t.Fatalf("crd: %d %v", code, m)
		}
		t.Cleanup(func() { c.do("DELETE", crds+"/knobs."+group, "", "") })
	}
	for _, c := range []*rawClient{kube, ours} {
		c.waitOK(knobs)
	}
	rvs := [2]string{kube.listRV(knobs), ours.listRV(knobs)}
	knob := func(name, meta string) string {
		return `{"apiVersion":"` + group + `/v1","kind":"Knob","metadata":{"name":"` + name + `"` + meta + `},"spec":{"v":1}}`
	}
	const (
		applyCT  = "application/apply-patch+yaml"
		empties  = `,"labels":{},"annotations":{},"finalizers":[],"ownerReferences":[]`
		ownerRef = `{"apiVersion":"v1","kind":"ConfigMap","name":"x","uid":"00000000-0000-0000-0000-000000000001"`
	)
	sendSteps(t, kube, ours, writeView, []writeStep{
		{"create with empties", "POST", knobs, jsonCT, knob("a", empties)},
		{"create with nulls and empty strings", "POST", knobs, jsonCT, knob("b", `,"labels":null,"annotations":null,"finalizers":null,"ownerReferences":null,"generateName":"","namespace":"","uid":"","selfLink":"","generation":0,"deletionGracePeriodSeconds":null,"creationTimestamp":null,"resourceVersion":"","managedFields":null`)},
		{"create with null values", "POST", knobs, jsonCT, knob("c", `,"labels":{"x":null},"annotations":{"y":null}`)},
		{"create with an owner's nulls", "POST", knobs, jsonCT, knob("d", `,"ownerReferences":[`+ownerRef+`,"controller":null,"blockOwnerDeletion":null}]`)},
		{"create with an owner's falses", "POST", knobs, jsonCT, knob("e", `,"ownerReferences":[`+ownerRef+`,"controller":false,"blockOwnerDeletion":false}]`)},
		{"create with empties, dry run", "POST", knobs + "?dryRun=All", jsonCT, knob("f", empties)},
		{"create with deletionGracePeriodSeconds 0", "POST", knobs, jsonCT, knob("h", `,"deletionGracePeriodSeconds":0`)},
		{"get", "GET", knobs + "/a", "", ""},
		{"update with empties", "PUT", knobs + "/a", jsonCT, knob("a", empties)},
		{"merge patch sets", "PATCH", knobs + "/a", mergePatch, `{"metadata":{"labels":{"l":"1"},"annotations":{"a":"1"},"finalizers":["example.com/f"]}}`},
		{"merge patch empties", "PATCH", knobs + "/a", mergePatch, `{"metadata":{"labels":{"l":null},"annotations":{"a":null}}}`},
		{"json patch empties", "PATCH", knobs + "/a", jsonPatch, `[{"op":"add","path":"/metadata/labels","value":{}},{"op":"replace","path":"/metadata/finalizers","value":[]},{"op":"add","path":"/metadata/ownerReferences","value":[]}]`},
		{"get again", "GET", knobs + "/a", "", ""},
		// Metadata as ObjectMeta encodes it, and the same otherwise
		// spelt: keys in another order, spaces, a fractional time.
		{"merge patch with labels and managedFields in another order", "PATCH", knobs + "/a", mergePatch,
			`{"metadata":{"labels":{ "z" : "1", "b":"2" },"annotations":{"a":"1"},"managedFields":[{"time":"2026-01-01T00:00:00.5Z","operation":"Update","manager":"m","fieldsV1":{ "f:spec" : { "f:v" : { } } },"fieldsType":"FieldsV1","apiVersion":"` + group + `/v1"}]}}`},
		{"merge patch with metadata as encoded", "PATCH", knobs + "/a", mergePatch,
			`{"metadata":{"labels":{"b":"2","z":"1"},"managedFields":[{"manager":"m","operation":"Update","apiVersion":"` + group + `/v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:v":{}}}}]}}`},
		{"apply with empties", "PATCH", knobs + "/k?fieldManager=m", applyCT, knob("k", `,"labels":{},"annotations":{},"finalizers":[]`)},
		{"apply with empties again", "PATCH", knobs + "/k?fieldManager=m", applyCT, knob("k", `,"labels":{},"annotations":{}`)},
		{"status update with empties", "PUT", knobs + "/k/status", jsonCT, knob("k", `,"labels":{},"annotations":{}`)},
		{"status json patch empties", "PATCH", knobs + "/k/status", jsonPatch, `[{"op":"add","path":"/metadata/labels","value":{}},{"op":"add","path":"/status","value":{"s":1}}]`},
		{"list", "GET", knobs, "", ""},
	})
	// Not k's: kube stores an apply's result with the empty metadata its
	// configuration named, and drops it only on reads, so the next write
	// of k, which drops it, is a write there but none on serve (README).
	q := "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name!%3Dk&resourceVersion="
	compareWatches(t, kube, ours, knobs+q, rvs)
}
