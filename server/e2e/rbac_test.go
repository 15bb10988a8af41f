package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

const carolToken = "carol-rbac-token"

// rbacServer runs serve (RBAC, the default) with carol in a token file,
// and the controllers (the clusterrole aggregation) when withControllers.
func rbacServer(t *testing.T, withControllers bool) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(carolToken+`,carol,3001,"devs"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.TokenAuthFile = tokens
		if withControllers {
			apiservertest.WithControllers(o)
		}
	})
	return s, tokenKubeconfig(t, s, carolToken)
}

// waitCanI polls carol's kubectl auth can-i until it answers want: the
// authorizer reads informers, so a grant takes effect a moment after
// its write.
func waitCanI(t *testing.T, s *testServer, carol, want string, args ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := kubectlErr(t, s, "", append([]string{"--kubeconfig", carol, "auth", "can-i"}, args...)...)
		if strings.TrimSpace(out) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("can-i %s: %q, want %q", strings.Join(args, " "), out, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRBACBootstrapPolicy: a fresh server has kube's bootstrap roles and
// bindings, annotated for autoupdate; a user with no binding of their
// own may discover and review themselves (system:discovery,
// system:basic-user) and nothing else; can-i says "no" as under kube.
func TestRBACBootstrapPolicy(t *testing.T) {
	t.Parallel()
	s, carol := rbacServer(t, false)
	for _, cr := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
		"system:public-info-viewer", "system:aggregate-to-view", "system:controller:namespace-controller"} {
		out := kubectl(t, s, "", "get", "clusterrole", cr, "-o", "jsonpath={.metadata.annotations.rbac\\.authorization\\.kubernetes\\.io/autoupdate}")
		if out != "true" {
			t.Errorf("clusterrole %s: autoupdate %q", cr, out)
		}
	}
	for _, crb := range []string{"cluster-admin", "system:basic-user", "system:discovery", "system:public-info-viewer"} {
		kubectl(t, s, "", "get", "clusterrolebinding", crb)
	}
	kubectl(t, s, "", "-n", "kube-system", "get", "role", "extension-apiserver-authentication-reader")
	kubectl(t, s, "", "-n", "kube-public", "get", "rolebinding", "system:controller:bootstrap-signer")

	out, err := kubectlErr(t, s, "", "--kubeconfig", carol, "auth", "can-i", "list", "pods")
	if err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("carol can-i list pods: %q, %v", out, err)
	}
	out, err = kubectlErr(t, s, "", "--kubeconfig", carol, "get", "pods")
	if err == nil || !strings.Contains(out, `pods is forbidden: User "carol" cannot list resource "pods" in API group "" in the namespace "default"`) {
		t.Errorf("carol get pods: %q", out)
	}
	// Discovery is allowed (system:discovery), so kubectl resolves names.
	out = kubectl(t, s, "", "--kubeconfig", carol, "api-versions")
	if !strings.Contains(out, "rbac.authorization.k8s.io/v1") {
		t.Errorf("carol api-versions: %q", out)
	}
	out = kubectl(t, s, "", "--kubeconfig", carol, "auth", "can-i", "--list")
	for _, want := range []string{"selfsubjectaccessreviews.authorization.k8s.io", "[/api/*]", "[/version]"} {
		if !strings.Contains(out, want) {
			t.Errorf("carol can-i --list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "*.*") {
		t.Errorf("carol can-i --list:\n%s", out)
	}
	// A bootstrap role is restored at restart unless autoupdate is off:
	// here the admin drops view's aggregation label from
	// system:aggregate-to-view, and a restart puts it back.
	kubectl(t, s, "", "label", "clusterrole", "system:aggregate-to-view", "rbac.authorization.k8s.io/aggregate-to-view-")
	s.Stop()
	s = startServer(t, s.Dir, func(o *apiserver.Options) { o.TokenAuthFile = filepath.Join(filepath.Dir(s.Dir), "tokens.csv") })
	out = kubectl(t, s, "", "get", "clusterrole", "system:aggregate-to-view", "-o", "jsonpath={.metadata.labels}")
	if !strings.Contains(out, "aggregate-to-view") {
		t.Errorf("after restart: labels %s", out)
	}
}

// TestRBACKubectl: the admin grants carol (a token user) a Role, a
// ClusterRole aggregated into another, and a ClusterRoleBinding; carol
// gets exactly what is granted, and cannot grant herself more.
func TestRBACKubectl(t *testing.T) {
	t.Parallel()
	s, carol := rbacServer(t, true)
	kubectl(t, s, "", "create", "namespace", "team")
	kubectl(t, s, "", "-n", "team", "create", "role", "pods", "--verb=get,list,watch", "--resource=pods,pods/log")
	kubectl(t, s, "", "-n", "team", "create", "role", "one-secret", "--verb=get", "--resource=secrets", "--resource-name=s1")
	kubectl(t, s, "", "-n", "team", "create", "rolebinding", "pods", "--role=pods", "--user=carol")
	kubectl(t, s, "", "-n", "team", "create", "rolebinding", "one-secret", "--role=one-secret", "--group=devs")
	// An aggregated ClusterRole: its rules come from the ClusterRoles
	// its selector matches, kept by the aggregation controller.
	kubectl(t, s, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: monitoring}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {rbac.example.com/aggregate-to-monitoring: "true"}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring-endpoints
  labels: {rbac.example.com/aggregate-to-monitoring: "true"}
rules:
- apiGroups: [""]
  resources: [services, endpoints]
  verbs: [get, list]
- nonResourceURLs: ["/metrics"]
  verbs: [get]
- apiGroups: ["apps"]
  resources: ["*"]
  verbs: [list]
`, "apply", "-f", "-")
	kubectl(t, s, "", "create", "clusterrolebinding", "carol-monitoring", "--clusterrole=monitoring", "--user=carol")

	waitCanI(t, s, carol, "yes", "list", "services", "-A")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods", "-n", "team"}, "yes"},
		{[]string{"watch", "pods", "-n", "team"}, "yes"},
		{[]string{"get", "pods", "--subresource=log", "-n", "team"}, "yes"},
		{[]string{"get", "pods", "--subresource=exec", "-n", "team"}, "no"},
		{[]string{"delete", "pods", "-n", "team"}, "no"},
		{[]string{"get", "pods", "-n", "default"}, "no"},
		{[]string{"get", "secrets/s1", "-n", "team"}, "yes"},
		{[]string{"get", "secrets/s2", "-n", "team"}, "no"},
		{[]string{"list", "secrets", "-n", "team"}, "no"},
		{[]string{"list", "endpoints", "-n", "default"}, "yes"},
		{[]string{"create", "services", "-n", "default"}, "no"},
		{[]string{"list", "deployments.apps", "-n", "default"}, "yes"},
		{[]string{"list", "statefulsets.apps", "-n", "team"}, "yes"},
		{[]string{"get", "deployments.apps", "-n", "team"}, "no"},
		{[]string{"get", "/metrics"}, "yes"},
		{[]string{"get", "/logs"}, "no"},
	} {
		out, _ := kubectlErr(t, s, "", append([]string{"--kubeconfig", carol, "auth", "can-i"}, c.args...)...)
		if got := strings.TrimSpace(out); got != c.want {
			t.Errorf("carol can-i %s: %q, want %q", strings.Join(c.args, " "), got, c.want)
		}
	}
	// The same through real requests.
	kubectl(t, s, "", "--kubeconfig", carol, "-n", "team", "get", "pods")
	kubectl(t, s, "", "--kubeconfig", carol, "get", "services", "-A")
	if out, err := kubectlErr(t, s, "", "--kubeconfig", carol, "-n", "team", "get", "secrets"); err == nil ||
		!strings.Contains(out, `secrets is forbidden: User "carol" cannot list resource "secrets" in API group "" in the namespace "team"`) {
		t.Errorf("carol get secrets: %v %s", err, out)
	}
	out := kubectl(t, s, "", "--kubeconfig", carol, "auth", "can-i", "--list", "-n", "team")
	for _, want := range []string{"pods/log", "secrets", "[s1]", "services", "*.apps", "[/metrics]"} {
		if !strings.Contains(out, want) {
			t.Errorf("carol can-i --list -n team lacks %q:\n%s", want, out)
		}
	}

	// Escalation: carol may write roles and rolebindings in team, but
	// only grant what she holds.
	kubectl(t, s, "", "-n", "team", "create", "role", "rbac-writer", "--verb=create,update", "--resource=roles,rolebindings")
	kubectl(t, s, "", "-n", "team", "create", "rolebinding", "rbac-writer", "--role=rbac-writer", "--user=carol")
	waitCanI(t, s, carol, "yes", "create", "roles", "-n", "team")
	kubectl(t, s, "", "--kubeconfig", carol, "-n", "team", "create", "role", "sub", "--verb=get", "--resource=pods")
	out, err := kubectlErr(t, s, "", "--kubeconfig", carol, "-n", "team", "create", "role", "esc", "--verb=list", "--resource=secrets")
	if err == nil || !strings.Contains(out, `roles.rbac.authorization.k8s.io "esc" is forbidden: user "carol" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:`+"\n"+`{APIGroups:[""], Resources:["secrets"], Verbs:["list"]}`) {
		t.Errorf("escalating role: %v\n%s", err, out)
	}
	out, err = kubectlErr(t, s, "", "--kubeconfig", carol, "-n", "team", "create", "rolebinding", "esc", "--clusterrole=cluster-admin", "--user=carol")
	if err == nil || !strings.Contains(out, `rolebindings.rbac.authorization.k8s.io "esc" is forbidden: user "carol"`) ||
		!strings.Contains(out, `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`) {
		t.Errorf("escalating binding: %v\n%s", err, out)
	}
	kubectl(t, s, "", "--kubeconfig", carol, "-n", "team", "create", "rolebinding", "sub", "--role=sub", "--user=dave")
	if out := kubectl(t, s, "", "-n", "team", "get", "roles,rolebindings", "-o", "name"); strings.Contains(out, "/esc") {
		t.Errorf("a refused object was stored:\n%s", out)
	}
}
