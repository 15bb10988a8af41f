package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/apiserver"
)

// TestBuiltinAdmissionPlugins checks kube's default admission plugins act
// on serve as they do on kube-apiserver (whose answers these are, checked
// by TestKubeAdmissionPluginsSameAsOurs where its binary is present):
// Priority with the system PriorityClasses, DefaultTolerationSeconds,
// LimitRanger, PodSecurity, ResourceQuota and TaintNodesByCondition.
func TestBuiltinAdmissionPlugins(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := newRawClient(t, restConfig(t, s))
	pods := "/api/v1/namespaces/default/pods"
	pod := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	expect := func(what string, code int, m map[string]any, want int, msg string) {
		t.Helper()
		if code != want || (msg != "" && m["message"] != msg) {
			t.Errorf("%s: %d %v, want %d %q", what, code, m["message"], want, msg)
		}
	}

	code, m := c.do("POST", pods, jsonCT, pod("plain", `{"containers":[{"name":"c","image":"x"}]}`))
	expect("plain pod", code, m, http.StatusCreated, "")
	if got, want := jsonAt(m, "spec.tolerations"), `[{"effect":"NoExecute","key":"node.kubernetes.io/not-ready","operator":"Exists","tolerationSeconds":300},{"effect":"NoExecute","key":"node.kubernetes.io/unreachable","operator":"Exists","tolerationSeconds":300}]`; got != want {
		t.Errorf("tolerations: %s, want %s", got, want)
	}
	if got := jsonAt(m, "spec.priority") + " " + jsonAt(m, "spec.preemptionPolicy"); got != `0 "PreemptLowerPriority"` {
		t.Errorf("priority: %s", got)
	}
	code, m = c.do("POST", pods, jsonCT, pod("critical", `{"priorityClassName":"system-cluster-critical","containers":[{"name":"c","image":"x"}]}`))
	expect("system-cluster-critical pod", code, m, http.StatusCreated, "")
	if got := jsonAt(m, "spec.priority"); got != "2000000000" {
		t.Errorf("system-cluster-critical: priority %s", got)
	}
	code, m = c.do("POST", pods, jsonCT, pod("nope", `{"priorityClassName":"nope","containers":[{"name":"c","image":"x"}]}`))
	expect("unknown priority class", code, m, http.StatusForbidden, `pods "nope" is forbidden: no PriorityClass with name nope was found`)

	code, m = c.do("POST", "/api/v1/namespaces/default/limitranges", jsonCT, `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m"},"max":{"cpu":"2"}}]}}`)
	expect("limit range", code, m, http.StatusCreated, "")
	// The plugin reads limit ranges from an informer (and, finding none,
	// from the server, at most every 30s): the range is awaited.
	c.await(pods+"?dryRun=All", pod("big", `{"containers":[{"name":"c","image":"x","resources":{"limits":{"cpu":"3"}}}]}`),
		func(code int, _ map[string]any) bool { return code == http.StatusForbidden })
	code, m = c.do("POST", pods, jsonCT, pod("big", `{"containers":[{"name":"c","image":"x","resources":{"limits":{"cpu":"3"}}}]}`))
	expect("over the limit range", code, m, http.StatusForbidden, `pods "big" is forbidden: maximum cpu usage per Container is 2, but limit is 3`)
	code, m = c.do("POST", pods, jsonCT, pod("limited", `{"containers":[{"name":"c","image":"x"}]}`))
	expect("limit range defaults", code, m, http.StatusCreated, "")
	if cs, _ := m["spec"].(map[string]any)["containers"].([]any); len(cs) != 1 || jsonAt(cs[0].(map[string]any), "resources") != `{"limits":{"cpu":"500m"},"requests":{"cpu":"500m"}}` {
		t.Errorf("limit range defaults: %v", cs)
	}

	code, m = c.do("POST", "/api/v1/namespaces", jsonCT, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"restricted","labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`)
	expect("restricted namespace", code, m, http.StatusCreated, "")
	c.await("/api/v1/namespaces/restricted/pods?dryRun=All", pod("bad", `{"containers":[{"name":"c","image":"x"}]}`),
		func(code int, _ map[string]any) bool { return code == http.StatusForbidden })
	code, m = c.do("POST", "/api/v1/namespaces/restricted/pods", jsonCT, pod("bad", `{"containers":[{"name":"c","image":"x"}]}`))
	expect("pod security", code, m, http.StatusForbidden, `pods "bad" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`)

	cms := "/api/v1/namespaces/default/configmaps"
	code, m = c.do("POST", "/api/v1/namespaces/default/resourcequotas", jsonCT, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"count/configmaps":"1"}}}`)
	expect("quota", code, m, http.StatusCreated, "")
	// No quota controller runs, as in envtest: the status is the test's.
	code, m = c.do("PATCH", "/api/v1/namespaces/default/resourcequotas/q/status", "application/merge-patch+json", `{"status":{"hard":{"count/configmaps":"1"},"used":{"count/configmaps":"1"}}}`)
	expect("quota status", code, m, http.StatusOK, "")
	c.await(cms+"?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"over"}}`,
		func(code int, _ map[string]any) bool { return code == http.StatusForbidden })
	code, m = c.do("POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"over"}}`)
	expect("over the quota", code, m, http.StatusForbidden, `configmaps "over" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1`)
	// Another namespace has no quota.
	code, m = c.do("POST", "/api/v1/namespaces/kube-public/configmaps", jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"free"}}`)
	expect("no quota", code, m, http.StatusCreated, "")

	code, m = c.do("POST", "/api/v1/nodes", jsonCT, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`)
	expect("node", code, m, http.StatusCreated, "")
	if got := jsonAt(m, "spec.taints"); got != `[{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"}]` {
		t.Errorf("node taints: %s", got)
	}
}

// TestAdmissionPluginsDisabled: --disable-admission-plugins takes kube's
// plugins away.
func TestAdmissionPluginsDisabled(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", func(o *apiserver.Options) {
		o.DisableAdmissionPlugins = []string{"DefaultTolerationSeconds", "Priority"}
	})
	c := newRawClient(t, restConfig(t, s))
	code, m := c.do("POST", "/api/v1/namespaces/default/pods", jsonCT, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"priorityClassName":"nope","containers":[{"name":"c","image":"x"}]}}`)
	if code != http.StatusCreated || jsonAt(m, "spec.tolerations") != "-" || jsonAt(m, "spec.priority") != "-" {
		t.Errorf("%d: tolerations %s, priority %s", code, jsonAt(m, "spec.tolerations"), jsonAt(m, "spec.priority"))
	}
}

// TestBootstrapObjectsManagers: the objects the server makes at start
// name kube-apiserver's managers in their managedFields (checked against
// kube-apiserver v1.37.2), so that a server-side apply conflict over one
// names the manager it would name on kube; the controllers' writes name
// kube-controller-manager's.
func TestBootstrapObjectsManagers(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := newRawClient(t, restConfig(t, s))
	for path, want := range map[string]string{
		"/api/v1/namespaces/kube-system":                                                   "kube-apiserver",
		"/api/v1/namespaces/default/services/kubernetes":                                   "kube-apiserver",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin":                    "kube-apiserver",
		"/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical":                  "kube-apiserver",
		"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt":                         "api-priority-and-fairness-config-producer-v1",
		"/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/global-default": "api-priority-and-fairness-config-producer-v1",
	} {
		code, m := c.do("GET", path, "", "")
		if code != http.StatusOK {
			t.Errorf("%s: %d %v", path, code, m["message"])
			continue
		}
		if got := jsonAt(m, "metadata.managedFields"); !strings.Contains(got, `"manager":"`+want+`"`) {
			t.Errorf("%s: managedFields %s, want manager %s", path, got, want)
		}
	}
}
