package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestKubeUnsafeDeleteSameAsOurs sends DELETEs with
// ignoreStoreReadErrorWithClusterBreakingPotential (kube's unsafe
// deletion of objects its storage cannot read, on by default in v1.37)
// to kube-apiserver and to serve and requires the same answers: a
// readable object is a 409 and stays, a missing one a 404; a namespace
// or an RBAC object, whose kube REST has no unsafe deleter, a 500 whatever
// its name; a deletecollection a 422; a user allowed to delete but not
// the unsafe verb a 403. What storage cannot read is compared in
// kube_crconversion_test.go (an object the conversion webhook refuses).
func TestKubeUnsafeDeleteSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	ws, widget := widgetsSideBySide(t, ns, `{"spec":{"a":1}}`, kube, ours)
	api := "/api/v1/namespaces/" + ns
	rbac := "/apis/rbac.authorization.k8s.io/v1"
	other := ns + "-x"
	for _, c := range []*rawClient{kube, ours} {
		for path, body := range map[string]string{
			api + "/configmaps":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"1"}}`,
			ws:                   widget("w"),
			"/api/v1/namespaces": `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + other + `"}}`,
			"/apis/apps/v1/namespaces/" + ns + "/deployments": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},
				"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
			rbac + "/namespaces/" + ns + "/roles":        `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"del"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["delete","get"]}]}`,
			rbac + "/namespaces/" + ns + "/rolebindings": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"del"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"del"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"bob"}]}`,
		} {
			if code, m := c.do("POST", path, jsonCT, body); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", path, code, m)
			}
		}
		t.Cleanup(func() { c.do("DELETE", "/api/v1/namespaces/"+other, "", "") })
	}
	const unsafe = `{"ignoreStoreReadErrorWithClusterBreakingPotential":true}`
	const unsafeDry = `{"ignoreStoreReadErrorWithClusterBreakingPotential":true,"dryRun":["All"]}`
	const unsafeQuery = "?ignoreStoreReadErrorWithClusterBreakingPotential=true"
	bob := http.Header{"Impersonate-User": {"bob"}}
	// RBAC's authorizer reads informers: bob's binding takes effect a
	// moment after it is written, on either server (else bob's delete is
	// refused for its verb, not for the unsafe one).
	for _, c := range []*rawClient{kube, ours} {
		deadline := time.Now().Add(30 * time.Second)
		for code, _, b := c.sendWith("GET", api+"/configmaps/cm", bob, ""); code != http.StatusOK; code, _, b = c.sendWith("GET", api+"/configmaps/cm", bob, "") {
			if time.Now().After(deadline) {
				t.Fatalf("bob's binding never took effect: %d %s", code, b)
			}
			time.Sleep(20 * time.Millisecond) // polling for an asynchronous condition
		}
	}
	for _, r := range []struct {
		path, ctype, body string
		hdr               http.Header
	}{
		{"/api/v1/namespaces/" + other, jsonCT, unsafe, nil},
		{"/api/v1/namespaces/" + other + "?dryRun=All" + "&ignoreStoreReadErrorWithClusterBreakingPotential=true", "", "", nil},
		{"/api/v1/namespaces/nope-" + ns, jsonCT, unsafeDry, nil},
		{"/api/v1/namespaces/default", jsonCT, unsafeDry, nil},
		{rbac + "/namespaces/" + ns + "/roles/del", jsonCT, unsafeDry, nil},
		{rbac + "/namespaces/" + ns + "/rolebindings/nope", jsonCT, unsafeDry, nil},
		{rbac + "/clusterroles/admin", jsonCT, unsafeDry, nil},
		{rbac + "/clusterrolebindings/nope", jsonCT, unsafeDry, nil},
		{api + "/configmaps/cm", jsonCT, unsafe, nil},
		{api + "/configmaps/cm", jsonCT, unsafeDry, nil},
		{api + "/configmaps/cm" + unsafeQuery, "", "", nil},
		{api + "/configmaps/cm", "application/yaml", "ignoreStoreReadErrorWithClusterBreakingPotential: true\n", nil},
		{api + "/configmaps/nope", jsonCT, unsafe, nil},
		{api + "/configmaps/a%25b", jsonCT, unsafe, nil},
		{"/api/v1/namespaces/a%25b", jsonCT, unsafe, nil},
		{api + "/configmaps/cm", jsonCT, `{"ignoreStoreReadErrorWithClusterBreakingPotential":true,"gracePeriodSeconds":0}`, nil},
		{api + "/configmaps/cm", jsonCT, `{"ignoreStoreReadErrorWithClusterBreakingPotential":false}`, nil},
		{api + "/configmaps", jsonCT, unsafeDry, nil},
		{api + "/configmaps" + unsafeQuery + "&labelSelector=a%3Db", "", "", nil},
		{api + "/configmaps/cm", jsonCT, unsafe, bob},
		{api + "/configmaps/nope", jsonCT, unsafe, bob},
		{api + "/pods/p/status", jsonCT, unsafe, nil},
		{"/apis/apps/v1/namespaces/" + ns + "/deployments/d", jsonCT, unsafe, nil},
		{ws + "/w", jsonCT, unsafe, nil},
		{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets." + ns + ".example.com", jsonCT, unsafeDry, nil},
		{api + "/configmaps/cm", "", "", nil}, // still there: an ordinary delete
	} {
		k, o := kube.deleteAnswer(r.path, r.ctype, r.body, r.hdr), ours.deleteAnswer(r.path, r.ctype, r.body, r.hdr)
		if k != o {
			t.Errorf("DELETE %s %s %v:\n kube:  %s\n serve: %s", r.path, r.body, r.hdr, k, o)
		}
	}
	// The comparison can fail: kube refuses to delete a readable object.
	if k := kube.deleteAnswer(ws+"/w", jsonCT, unsafe, nil); k[:4] != "409 " {
		t.Errorf("kube's unsafe delete of a readable object: %s", k)
	}
}

// deleteAnswer is the code and comparable answer of a DELETE sent with
// the headers hdr.
func (c *rawClient) deleteAnswer(path, ctype, body string, hdr http.Header) string {
	c.t.Helper()
	h := http.Header{"Accept": {"application/json"}}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		h[k] = v
	}
	code, _, b := c.sendWith("DELETE", path, h, body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Sprintf("%d %q", code, b)
	}
	return fmt.Sprintf("%d %s", code, writeView(m))
}
