package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestKubeRBACWriteInEffectSameAsOurs binds a user and at once acts as
// them, 30 times, deleting the binding and at once acting again, on
// kube-apiserver and on serve; then lets a user bind a ClusterRole
// created just before. serve answers an RBAC write once its authorizer
// sees it, so it must let every user in right after the binding's create
// and refuse every one right after its delete; kube-apiserver's
// authorizer may lag its answers (its counts are logged, not required).
// Both must accept every binding of a ClusterRole created just before:
// kube's escalation check reads storage, serve's waits for its informers.
func TestKubeRBACWriteInEffectSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	rbac := "/apis/rbac.authorization.k8s.io/v1"
	lister, binder := ns+"-cm-lister", ns+"-binder"
	type counts struct{ inAfterCreate, outAfterDelete, bound int }
	run := func(c *rawClient) counts {
		for path, body := range map[string]string{
			rbac + "/clusterroles": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + lister + `"},
				"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["list","get"]}]}`,
		} {
			if code, m := c.do("POST", path, jsonCT, body); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", path, code, m)
			}
		}
		t.Cleanup(func() { c.do("DELETE", rbac+"/clusterroles/"+lister, "", "") })
		var n counts
		for i := range 30 {
			user := fmt.Sprintf("%s-u%d", ns, i)
			as := http.Header{"Impersonate-User": {user}, "Accept": {"application/json"}}
			rb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + user + `"},
				"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + lister + `"},
				"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"` + user + `"}]}`
			if code, m := c.do("POST", rbac+"/namespaces/"+ns+"/rolebindings", jsonCT, rb); code != http.StatusCreated {
				t.Fatalf("binding %s: %d %v", user, code, m)
			}
			if code, _, _ := c.sendWith("GET", "/api/v1/namespaces/"+ns+"/configmaps", as, ""); code == http.StatusOK {
				n.inAfterCreate++
			}
			if code, m := c.do("DELETE", rbac+"/namespaces/"+ns+"/rolebindings/"+user, "", ""); code != http.StatusOK {
				t.Fatalf("deleting binding %s: %d %v", user, code, m)
			}
			if code, _, _ := c.sendWith("GET", "/api/v1/namespaces/"+ns+"/configmaps", as, ""); code == http.StatusForbidden {
				n.outAfterDelete++
			}
		}
		// bob may create RoleBindings and holds what the roles he binds
		// grant, so kube's escalation check lets him bind them.
		bob := http.Header{"Impersonate-User": {ns + "-bob"}, "Content-Type": {jsonCT}, "Accept": {"application/json"}}
		for path, body := range map[string]string{
			rbac + "/clusterroles": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + binder + `"},
				"rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["rolebindings"],"verbs":["create"]},{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`,
			rbac + "/namespaces/" + ns + "/rolebindings": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bob"},
				"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + binder + `"},
				"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"` + ns + `-bob"}]}`,
		} {
			if code, m := c.do("POST", path, jsonCT, body); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", path, code, m)
			}
		}
		t.Cleanup(func() { c.do("DELETE", rbac+"/clusterroles/"+binder, "", "") })
		// bob's own binding must be in effect first, on either server
		// (kube's authorizer may lag it): his GET of a missing ConfigMap
		// is a 404 once it is, a 403 before.
		deadline := time.Now().Add(30 * time.Second)
		for code, _, b := c.sendWith("GET", "/api/v1/namespaces/"+ns+"/configmaps/nope", bob, ""); code != http.StatusNotFound; code, _, b = c.sendWith("GET", "/api/v1/namespaces/"+ns+"/configmaps/nope", bob, "") {
			if time.Now().After(deadline) {
				t.Fatalf("bob's binding never took effect: %d %s", code, b)
			}
			time.Sleep(20 * time.Millisecond) // polling for an asynchronous condition
		}
		for i := range 30 {
			role := fmt.Sprintf("%s-r%d", ns, i)
			cr := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + role + `"},
				"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`
			if code, m := c.do("POST", rbac+"/clusterroles", jsonCT, cr); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", role, code, m)
			}
			t.Cleanup(func() { c.do("DELETE", rbac+"/clusterroles/"+role, "", "") })
			rb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + role + `"},
				"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + role + `"},
				"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"carol"}]}`
			if code, _, b := c.sendWith("POST", rbac+"/namespaces/"+ns+"/rolebindings", bob, rb); code == http.StatusCreated {
				n.bound++
			} else {
				t.Logf("bob binding %s: %d %s", role, code, b)
			}
		}
		return n
	}
	k, o := run(kube), run(ours)
	t.Logf("kube-apiserver: %d of 30 users in right after their binding's create, %d of 30 out right after its delete, %d of 30 bindings of a new ClusterRole accepted", k.inAfterCreate, k.outAfterDelete, k.bound)
	if want := (counts{30, 30, 30}); o != want {
		t.Errorf("serve: %d of 30 users in right after their binding's create, %d of 30 out right after its delete, %d of 30 bindings of a new ClusterRole accepted; want all", o.inAfterCreate, o.outAfterDelete, o.bound)
	}
	if k.bound != o.bound {
		t.Errorf("bindings of a ClusterRole created just before: kube accepted %d of 30, serve %d", k.bound, o.bound)
	}
}
