package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// sideBySide starts listwatch beside the real kube-apiserver and returns
// raw clients of both and a namespace that exists on both.
func sideBySide(t *testing.T) (kube, ours *rawClient, ns string) {
	t.Helper()
	_, _, kube, ours, ns = sideBySideConfigs(t)
	return kube, ours, ns
}

// sideBySideConfigs is sideBySide with the admin configs the clients
// were made from (kube's, then serve's), for clients of other users.
func sideBySideConfigs(t *testing.T) (kcfg, ocfg *rest.Config, kube, ours *rawClient, ns string) {
	t.Helper()
	ks := kubeServer(t)
	kcfg, err := clientcmd.BuildConfigFromFlags("", ks.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	ocfg = restConfig(t, startServer(t, ""))
	kube, ours = newRawClient(t, kcfg), newRawClient(t, ocfg)
	ns = kubeNamespace(t, kubeClient(t, ks.AdminConfig()))
	if code, m := ours.do("POST", "/api/v1/namespaces", jsonCT, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`); code != http.StatusCreated {
		t.Fatalf("namespace: %d %v", code, m)
	}
	return kcfg, ocfg, kube, ours, ns
}

// writeType is the Content-Type a test sends a body with for method: a
// merge patch for PATCH, else JSON.
func writeType(method string) string {
	if method == "PATCH" {
		return "application/merge-patch+json"
	}
	return jsonCT
}

// rawAnswer is one response: code, body, and the body as JSON if it is.
type rawAnswer struct {
	code int
	body []byte
	m    map[string]any
}

func (c *rawClient) raw(method, path, ctype, body string) rawAnswer {
	c.t.Helper()
	code, _, b := c.send(method, path, ctype, "", body)
	a := rawAnswer{code: code, body: b}
	_ = json.Unmarshal(b, &a.m)
	return a
}

// statusView is what is compared of an answer: the code, and for a
// Status its status, reason, message and causes; for anything else the
// body's length (log streams) or kind.
func statusView(a rawAnswer) string {
	if a.m == nil {
		return fmt.Sprintf("%d body=%q", a.code, a.body)
	}
	if a.m["kind"] != "Status" {
		return fmt.Sprintf("%d kind=%v", a.code, a.m["kind"])
	}
	var causes any
	if d, ok := a.m["details"].(map[string]any); ok {
		causes = d["causes"]
	}
	msg := uidRE.ReplaceAllString(fmt.Sprint(a.m["message"]), "<uid>")
	return fmt.Sprintf("%d %v %v %q causes=%v", a.code, a.m["status"], a.m["reason"], msg, causes)
}

var uidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestKubePodSubresources sends the same requests on pods/log, exec,
// attach, portforward, the three proxies and pods/eviction to a real
// kube-apiserver (no kubelets, no controllers) and to listwatch, and
// requires the same answers: code and Status (status, reason, message,
// causes), or the same body.
func TestKubePodSubresources(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	node, lost := "node-"+ns, "lost-"+ns
	for _, c := range []*rawClient{kube, ours} {
		t.Cleanup(func() { c.do("DELETE", "/api/v1/nodes/"+node, "", "") })
	}
	api := "/api/v1/namespaces/" + ns
	pods := api + "/pods"
	pod := func(name, nodeName, labels string, containers ...string) string {
		var cs []string
		for _, c := range containers {
			cs = append(cs, `{"name":"`+c+`","image":"busybox"}`)
		}
		spec := `"containers":[` + strings.Join(cs, ",") + `]`
		if nodeName != "" {
			spec += `,"nodeName":"` + nodeName + `"`
		}
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","labels":{` + labels + `}},"spec":{` + spec + `}}`
	}
	running := `{"status":{"phase":"Running","podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}],"conditions":[{"type":"Ready","status":"True"}]}}`
	pdb := func(name string) string {
		return `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"` + name + `"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"a"}}}}`
	}
	pdbStatus := func(allowed, healthy int) string {
		return fmt.Sprintf(`{"status":{"observedGeneration":1,"disruptionsAllowed":%d,"currentHealthy":%d,"desiredHealthy":1,"expectedPods":%d}}`, allowed, healthy, healthy)
	}
	ev := func(name, extra string) string {
		return `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `"}` + extra + `}`
	}
	pdbs := "/apis/policy/v1/namespaces/" + ns + "/poddisruptionbudgets"
	const merge = "application/merge-patch+json"
	steps := []struct{ name, method, path, ctype, body string }{
		{"node", "POST", "/api/v1/nodes", jsonCT, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + node + `"},"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}]}}`},
		{"pod unscheduled", "POST", pods, jsonCT, pod("unscheduled", "", "")},
		{"pod two containers", "POST", pods, jsonCT, pod("two", "", "", "a", "b")},
		{"pod on a missing node", "POST", pods, jsonCT, pod("lost", lost, "", "c")},

		{"log of an unscheduled pod", "GET", pods + "/unscheduled/log", "", ""},
		{"log of a missing container", "GET", pods + "/unscheduled/log?container=x", "", ""},
		{"log without a container of two", "GET", pods + "/two/log", "", ""},
		{"log of a missing pod", "GET", pods + "/missing/log", "", ""},
		{"log on a missing node", "GET", pods + "/lost/log", "", ""},
		{"log tailLines negative", "GET", pods + "/unscheduled/log?tailLines=-1", "", ""},
		{"log tailLines not a number", "GET", pods + "/unscheduled/log?tailLines=x", "", ""},
		{"log follow not a bool", "GET", pods + "/unscheduled/log?follow=maybe", "", ""},
		{"log POST", "POST", pods + "/unscheduled/log", jsonCT, "{}"},

		{"exec on an unscheduled pod", "POST", pods + "/unscheduled/exec?command=ls", "", ""},
		{"exec GET on an unscheduled pod", "GET", pods + "/unscheduled/exec?command=ls", "", ""},
		{"exec on a missing node", "POST", pods + "/lost/exec?command=ls", "", ""},
		{"exec of a missing container", "POST", pods + "/lost/exec?command=ls&container=x", "", ""},
		{"exec of a missing pod", "POST", pods + "/missing/exec?command=ls", "", ""},
		{"exec dry run", "POST", pods + "/unscheduled/exec?command=ls&dryRun=All", "", ""},
		{"exec stdin not a bool", "POST", pods + "/unscheduled/exec?command=ls&stdin=maybe", "", ""},
		{"exec PUT", "PUT", pods + "/unscheduled/exec", jsonCT, "{}"},
		{"attach on an unscheduled pod", "POST", pods + "/unscheduled/attach?stdout=true", "", ""},
		{"attach on a missing node", "POST", pods + "/lost/attach?stdout=true", "", ""},
		{"portforward on an unscheduled pod", "POST", pods + "/unscheduled/portforward?ports=80", "", ""},
		{"portforward on a missing node", "POST", pods + "/lost/portforward", "", ""},
		{"portforward DELETE", "DELETE", pods + "/lost/portforward", "", ""},

		{"proxy to a pod without IP", "GET", pods + "/unscheduled/proxy/", "", ""},
		{"proxy to a bad pod id", "GET", pods + "/a:b:c:d/proxy", "", ""},
		{"proxy to a missing pod", "GET", pods + "/missing/proxy/x", "", ""},
		{"service", "POST", api + "/services", jsonCT, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":80}]}}`},
		{"service proxy without endpoints", "GET", api + "/services/web/proxy/", "", ""},
		{"service proxy to a missing port", "GET", api + "/services/web:81/proxy/", "", ""},
		{"service proxy to a missing service", "GET", api + "/services/nope:80/proxy/", "", ""},
		{"node proxy to loopback", "GET", "/api/v1/nodes/" + node + "/proxy/healthz", "", ""},
		{"node proxy to a missing node", "GET", "/api/v1/nodes/" + lost + "/proxy/", "", ""},

		{"evict a pending pod", "POST", pods + "/unscheduled/eviction", jsonCT, ev("unscheduled", "")},
		{"evict a missing pod", "POST", pods + "/unscheduled/eviction", jsonCT, ev("unscheduled", "")},
		{"evict another name", "POST", pods + "/two/eviction", jsonCT, ev("unscheduled", "")},
		{"evict with a bad body", "POST", pods + "/two/eviction", jsonCT, `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"two"},"bogus":1}`},
		{"evict GET", "GET", pods + "/two/eviction", "", ""},
		{"pod three", "POST", pods, jsonCT, pod("three", "", "", "c")},
		{"evict with a v1 body", "POST", pods + "/three/eviction", jsonCT, `{"apiVersion":"v1","kind":"Eviction","metadata":{"name":"three"}}`},
		{"evict with an apps/v1 body", "POST", pods + "/three/eviction", jsonCT, `{"apiVersion":"apps/v1","kind":"Eviction","metadata":{"name":"three"}}`},
		{"evict in another namespace", "POST", pods + "/three/eviction", jsonCT, `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"three","namespace":"other"}}`},
		{"evict with bad dryRun", "POST", pods + "/three/eviction?dryRun=Bogus", jsonCT, ev("three", "")},
		{"evict with a bad fieldManager", "POST", pods + "/three/eviction?fieldManager=" + strings.Repeat("m", 200), jsonCT, ev("three", "")},
		{"evict with a ConfigMap", "POST", pods + "/three/eviction", jsonCT, `{"apiVersion":"policy/v1","kind":"ConfigMap","metadata":{"name":"three"}}`},
		{"evict with a v1beta1 body", "POST", pods + "/three/eviction", jsonCT, `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"three"}}`},
		{"evict without kind", "POST", pods + "/three/eviction", jsonCT, `{"metadata":{"name":"three"}}`},
		{"pod running", "POST", pods, jsonCT, pod("run", node, `"app":"a"`, "c")},
		{"pod running status", "PATCH", pods + "/run/status", merge, running},
		{"proxy to a loopback pod IP", "GET", pods + "/run/proxy/", "", ""},
		{"evict with differing dry runs", "POST", pods + "/run/eviction?dryRun=All", jsonCT, ev("run", `,"deleteOptions":{"dryRun":["Other"]}`)},
		{"budget", "POST", pdbs, jsonCT, pdb("budget")},
		{"evict, budget not observed", "POST", pods + "/run/eviction", jsonCT, ev("run", "")},
		{"budget blocks", "PATCH", pdbs + "/budget/status", merge, pdbStatus(0, 1)},
		{"evict, budget blocks", "POST", pods + "/run/eviction", jsonCT, ev("run", "")},
		{"budget allows", "PATCH", pdbs + "/budget/status", merge, pdbStatus(1, 2)},
		{"evict dry run", "POST", pods + "/run/eviction?dryRun=All", jsonCT, ev("run", "")},
		{"second budget", "POST", pdbs, jsonCT, pdb("second")},
		{"evict with two budgets", "POST", pods + "/run/eviction", jsonCT, ev("run", "")},
		{"drop the second budget", "DELETE", pdbs + "/second", "", ""},
		{"evict with a wrong uid", "POST", pods + "/run/eviction", jsonCT, ev("run", `,"deleteOptions":{"preconditions":{"uid":"nope"}}`)},
		{"budget allows again", "PATCH", pdbs + "/budget/status", merge, `{"status":{"disruptionsAllowed":1,"disruptedPods":null}}`},
		{"evict", "POST", pods + "/run/eviction", jsonCT, ev("run", `,"deleteOptions":{"gracePeriodSeconds":0}`)},
		{"evicted pod is gone", "GET", pods + "/run", "", ""},
	}
	for _, st := range steps {
		k, o := kube.raw(st.method, st.path, st.ctype, st.body), ours.raw(st.method, st.path, st.ctype, st.body)
		if kv, ov := statusView(k), statusView(o); kv != ov {
			t.Errorf("%s (%s %s):\n kube      %s\n listwatch %s", st.name, st.method, st.path, kv, ov)
		}
	}
	// The budget as the evictions left it: one disruption taken, the pod
	// recorded (the time aside).
	bk, bo := kube.raw("GET", pdbs+"/budget", "", ""), ours.raw("GET", pdbs+"/budget", "", "")
	view := func(a rawAnswer) any {
		st, _ := a.m["status"].(map[string]any)
		if st == nil {
			return a.code
		}
		dp, _ := st["disruptedPods"].(map[string]any)
		var names []string
		for n := range dp {
			names = append(names, n)
		}
		return []any{st["disruptionsAllowed"], names, st["conditions"] != nil}
	}
	if !reflect.DeepEqual(view(bk), view(bo)) {
		t.Errorf("budget after evictions:\n kube      %v\n listwatch %v", bk.m["status"], bo.m["status"])
	}
}
