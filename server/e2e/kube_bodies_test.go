package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestKubeBodyErrorsSameAsOurs sends the same malformed or mismatched
// bodies of a built-in kind to kube-apiserver and to serve, as creates,
// updates and the options of deletes, and bad options of writes: the same code and message (up to the object's uid, which
// differs between the two).
func TestKubeBodyErrorsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	uids := map[*rawClient]string{}
	for _, c := range []*rawClient{kube, ours} {
		code, m := c.do("POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pt"}}`)
		if code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, m)
		}
		uids[c], _ = m["metadata"].(map[string]any)["uid"].(string)
	}
	for _, step := range []struct{ method, path, body, ctype string }{
		{"POST", cms, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {a: \"1\"}\n", "application/yaml"},
		{"POST", cms, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {a: 1}\n", "application/yaml"},
		{"POST", cms, ": :", "application/yaml"},
		{"POST", cms, "- a", "application/yaml"},
		{"PUT", cms + "/pt", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pt}\n", "application/yaml"},
		{"POST", cms, "{}", "text/plain"},
		{"DELETE", cms + "/pt", "x", "text/plain"},
		{"POST", cms, "", ""},
		{"POST", cms, "{", ""},
		{"POST", cms, "[]", ""},
		{"POST", cms, "xyz", ""},
		{"POST", cms, "null", ""},
		{"POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"},"extra":[1,2,3,4,5,6]`, ""},
		{"POST", cms, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`, ""},
		{"POST", cms, `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"a"}}`, ""},
		{"POST", cms, `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"a"}}`, ""},
		{"POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":1}}`, ""},
		{"PUT", cms + "/pt", `{"apiVersion":"v1","kind":"ConfigMap"}`, ""},
		{"PUT", cms + "/pt", "null", ""},
		{"PUT", cms + "/pt", "{", ""},
		{"PUT", cms + "/pt", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`, ""},
		{"PUT", cms + "/pt", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pt","uid":"abc"}}`, ""},
		{"PUT", cms + "/missing", `{"apiVersion":"v1","kind":"ConfigMap"}`, ""},
		// DeleteOptions: from the body if there is one, else the query.
		{"DELETE", cms + "/pt", "{", ""},
		{"DELETE", cms + "/pt", `{"kind":"Pod"}`, ""},
		{"DELETE", cms + "/pt", `{"propagationPolicy":"Bogus"}`, ""},
		{"DELETE", cms + "/pt", `{"dryRun":["All","x"]}`, ""},
		{"DELETE", cms + "/pt", `{"orphanDependents":true,"propagationPolicy":"Background"}`, ""},
		{"DELETE", cms + "/pt?gracePeriodSeconds=abc", "", ""},
		{"DELETE", cms + "/pt?propagationPolicy=x", "", ""},
		{"DELETE", cms + "/pt?dryRun=x", "", ""},
		// A write's options: one 422 naming each bad one, as kube's
		// Create/Update/PatchOptions validation.
		{"POST", cms + "?dryRun=x", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"o"}}`, ""},
		{"POST", cms + "?dryRun=&fieldManager=%01&fieldValidation=q", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"o"}}`, ""},
		{"PUT", cms + "/pt?dryRun=x&fieldValidation=q", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pt"}}`, ""},
		{"PATCH", cms + "/pt?dryRun=x&fieldValidation=q", `{}`, "application/merge-patch+json"},
		{"PATCH", cms + "/pt?force=x", `{}`, "application/merge-patch+json"},
	} {
		path := step.path + "?dryRun=All"
		if strings.Contains(step.path, "?") {
			path = step.path + "&dryRun=All"
		}
		ct := step.ctype
		if ct == "" {
			ct = jsonCT
		}
		kc, km := kube.do(step.method, path, ct, step.body)
		oc, om := ours.do(step.method, path, ct, step.body)
		kmsg, _ := km["message"].(string)
		omsg, _ := om["message"].(string)
		kmsg, omsg = strings.ReplaceAll(kmsg, uids[kube], "UID"), strings.ReplaceAll(omsg, uids[ours], "UID")
		if kc != oc || kmsg != omsg {
			t.Errorf("%s %s %s: kube %d %q, serve %d %q", step.method, step.path, step.body, kc, kmsg, oc, omsg)
		}
	}
}
