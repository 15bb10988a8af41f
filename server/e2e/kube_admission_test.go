package e2e

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKubeAdmissionPluginsSameAsOurs sends the same writes to
// kube-apiserver (its default admission plugins, ServiceAccount off as in
// envtest) and to serve, and compares what kube's built-in plugins make of
// them: LimitRanger's defaults and refusals, Priority (the system
// PriorityClasses, an unknown class refused), DefaultTolerationSeconds,
// PodSecurity's enforcement, ResourceQuota, TaintNodesByCondition,
// DefaultStorageClass, StorageObjectInUseProtection and
// DefaultIngressClass. kube-apiserver is shared by the tests, so the
// cluster-scoped objects have names of this test's namespace and are
// deleted at its end.
func TestKubeAdmissionPluginsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	api := "/api/v1/namespaces/" + ns
	restricted := ns + "-restricted"
	sc, ic, node, pv := ns+"-sc", ns+"-ic", ns+"-node", ns+"-pv"
	pod := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	container := `{"name":"c","image":"nginx"}`
	podFields := []string{"metadata.annotations", "spec.containers", "spec.priority", "spec.priorityClassName", "spec.preemptionPolicy", "spec.tolerations"}
	for _, c := range []*rawClient{kube, ours} {
		t.Cleanup(func() {
			for _, p := range []string{
				"/apis/storage.k8s.io/v1/storageclasses/" + sc,
				"/apis/networking.k8s.io/v1/ingressclasses/" + ic,
				"/api/v1/nodes/" + node,
				"/api/v1/persistentvolumes/" + pv,
				"/api/v1/namespaces/" + restricted,
			} {
				c.do("DELETE", p, "", "")
			}
			// The protection finalizers would keep the PV (no controller
			// removes them on either server).
			c.do("PATCH", "/api/v1/persistentvolumes/"+pv, "application/merge-patch+json", `{"metadata":{"finalizers":null}}`)
		})
		c.step("limitrange", "POST", api+"/limitranges", jsonCT, `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"128Mi"},"defaultRequest":{"cpu":"100m"},"max":{"cpu":"2"}}]}}`, "spec")
		c.step("pod defaulted", "POST", api+"/pods", jsonCT, pod("plain", `{"containers":[`+container+`]}`), podFields...)
		c.step("pod over the limit range", "POST", api+"/pods", jsonCT, pod("big", `{"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"3"}}}]}`), podFields...)
		c.step("pod of a system priority class", "POST", api+"/pods", jsonCT, pod("critical", `{"priorityClassName":"system-node-critical","containers":[`+container+`]}`), podFields...)
		c.step("pod of an unknown priority class", "POST", api+"/pods", jsonCT, pod("nope", `{"priorityClassName":"nope","containers":[`+container+`]}`), podFields...)
		c.step("pod with a priority of its own", "POST", api+"/pods", jsonCT, pod("prio", `{"priority":5,"containers":[`+container+`]}`), podFields...)
		c.step("priorityclass system-", "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", jsonCT, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"system-`+ns+`"},"value":5}`, "value")
		c.step("restricted namespace", "POST", "/api/v1/namespaces", jsonCT, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+restricted+`","labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`, "metadata.labels")
		c.step("pod refused by PodSecurity", "POST", "/api/v1/namespaces/"+restricted+"/pods", jsonCT, pod("bad", `{"containers":[`+container+`]}`), podFields...)
		c.step("bad PodSecurity label", "POST", "/api/v1/namespaces", jsonCT, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+restricted+`-x","labels":{"pod-security.kubernetes.io/enforce":"strictest"}}}`, "metadata.labels")
		c.step("quota", "POST", api+"/resourcequotas", jsonCT, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"count/secrets":"1","count/configmaps":"0"}}}`, "spec")
		c.step("secret before the quota's status", "POST", api+"/secrets", jsonCT, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s0"}}`, "type")
		// No quota controller runs (none in envtest either): the status is
		// the test's. ResourceQuota reads it from an informer, so each
		// status is awaited (by dry runs) before a write is expected to
		// see it: the configmap, allowed none, is refused once the
		// plugin has the status.
		c.step("quota status", "PATCH", api+"/resourcequotas/q/status", "application/merge-patch+json", `{"status":{"hard":{"count/secrets":"1","count/configmaps":"0"},"used":{"count/secrets":"0","count/configmaps":"0"}}}`, "status")
		refused := func(code int, _ map[string]any) bool { return code == http.StatusForbidden }
		c.await(api+"/configmaps?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`, refused)
		c.step("secret within the quota", "POST", api+"/secrets", jsonCT, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"}}`, "type")
		c.await(api+"/secrets?dryRun=All", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s2"}}`, refused)
		c.step("secret over the quota", "POST", api+"/secrets", jsonCT, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s2"}}`, "type")
		c.step("quota used", "GET", api+"/resourcequotas/q", "", "", "status")
		c.step("node tainted", "POST", "/api/v1/nodes", jsonCT, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+node+`"}}`, "spec")
		c.step("default storage class", "POST", "/apis/storage.k8s.io/v1/storageclasses", jsonCT, `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"`+sc+`","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"example.com/x"}`, "provisioner")
		// kube's plugins read the classes from informers: the new default
		// is awaited (by dry runs) before it is expected to be applied.
		pvcBody := `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"pvc"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`
		c.await(api+"/persistentvolumeclaims?dryRun=All", pvcBody, has("spec.storageClassName"))
		c.step("pvc defaulted", "POST", api+"/persistentvolumeclaims", jsonCT, pvcBody, "metadata.finalizers", "spec.storageClassName")
		c.step("pvc resized without expansion", "PATCH", api+"/persistentvolumeclaims/pvc", "application/merge-patch+json", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`, "spec.resources")
		c.step("pv protected", "POST", "/api/v1/persistentvolumes", jsonCT, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"`+pv+`"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/x"}}}`, "metadata.finalizers")
		c.step("default ingress class", "POST", "/apis/networking.k8s.io/v1/ingressclasses", jsonCT, `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass","metadata":{"name":"`+ic+`","annotations":{"ingressclass.kubernetes.io/is-default-class":"true"}},"spec":{"controller":"example.com/ic"}}`, "spec")
		ingBody := `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"ing"},"spec":{"defaultBackend":{"service":{"name":"s","port":{"number":80}}}}}`
		c.await("/apis/networking.k8s.io/v1/namespaces/"+ns+"/ingresses?dryRun=All", ingBody, has("spec.ingressClassName"))
		c.step("ingress defaulted", "POST", "/apis/networking.k8s.io/v1/namespaces/"+ns+"/ingresses", jsonCT, ingBody, "spec.ingressClassName")
	}
	if !slices.Equal(kube.log, ours.log) {
		for i := range max(len(kube.log), len(ours.log)) {
			k, o := at(kube.log, i), at(ours.log, i)
			if k != o {
				t.Errorf("kube:  %s\nserve: %s", k, o)
			}
		}
	}
	// The test must have seen each plugin act, not two servers alike in
	// doing nothing.
	for i, want := range map[int]int{1: http.StatusCreated, 2: http.StatusForbidden, 4: http.StatusForbidden, 8: http.StatusForbidden, 14: http.StatusForbidden} {
		if got := codeOf(ours.log, i); got != want {
			t.Errorf("serve step %d: %s, want %d", i, at(ours.log, i), want)
		}
	}
}

// at is log's line i, or "(none)".
func at(log []string, i int) string {
	if i < len(log) {
		return log[i]
	}
	return "(none)"
}

// codeOf is the status code of log's line i ("name: code …"), 0 if none.
func codeOf(log []string, i int) int {
	_, rest, ok := strings.Cut(at(log, i), ": ")
	if !ok {
		return 0
	}
	code, _ := strconv.Atoi(strings.Fields(rest + " ")[0])
	return code
}

// await creates body at path (a dry run) until done says the answer is
// the one awaited, for up to 30s; then it fails the test, which goes on
// to show what else differs.
func (c *rawClient) await(path, body string, done func(code int, m map[string]any) bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, m := c.do("POST", path, jsonCT, body)
		if done(code, m) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Errorf("%s%s: still %d %v after 30s", c.host, path, code, m)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// has is an await condition: the answer has field.
func has(field string) func(int, map[string]any) bool {
	return func(_ int, m map[string]any) bool { return jsonAt(m, field) != "-" }
}
