package e2e

import (
	"net/http"
	"testing"
	"time"
)

// TestKubeApplySameAsOurs runs a script of server-side applies (and the
// writes around them that managedFields record) against a real
// kube-apiserver and listwatch and requires the same answers: code,
// Status (conflicts listing fields and managers), and objects with their
// managedFields, times, uids and resourceVersions aside.
func TestKubeApplySameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	const group = "applytest.example.com"
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"dials.` + group + `"},
		"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"dials","singular":"dial","kind":"Dial"},
		"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object","properties":{
			"spec":{"type":"object","properties":{"level":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"},
				"ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}}}},
			"status":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}}]}}`
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	for _, c := range []*rawClient{kube, ours} {
		if code, m := c.do("POST", crds, jsonCT, crd); code != http.StatusCreated {
			t.Fatalf("crd: %d %v", code, m)
		}
		t.Cleanup(func() { c.do("DELETE", crds+"/dials."+group, "", "") })
	}
	dials := "/apis/" + group + "/v1/namespaces/" + ns + "/dials"
	for _, c := range []*rawClient{kube, ours} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, _ := c.do("GET", dials, "", "")
			if code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("dials not served: %d", code)
			}
			time.Sleep(50 * time.Millisecond) // polling for an asynchronous condition
		}
	}
	const apply = "application/apply-patch+yaml"
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	deps := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	pods := "/api/v1/namespaces/" + ns + "/pods"
	const smp = "application/strategic-merge-patch+json"
	node := "node-" + ns
	for _, c := range []*rawClient{kube, ours} {
		t.Cleanup(func() { c.do("DELETE", "/api/v1/nodes/"+node, "", "") })
	}
	dep := func(containers string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector:\n    matchLabels: {app: d}\n  template:\n    metadata:\n      labels: {app: d}\n    spec:\n      containers:\n" + containers
	}
	sendSteps(t, kube, ours, comparable, []writeStep{
		{"apply creates", "PATCH", cms + "/cm?fieldManager=alice", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {team: a}\ndata:\n  x: '1'\n  y: '2'\n"},
		{"apply without fieldManager", "PATCH", cms + "/cm", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"},
		{"force on a merge patch", "PATCH", cms + "/cm?force=true", mergePatch, `{"data":{"z":"3"}}`},
		{"force not a bool", "PATCH", cms + "/cm?fieldManager=bob&force=maybe", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"},
		{"conflict", "PATCH", cms + "/cm?fieldManager=bob", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {team: b}\ndata:\n  x: '9'\n  w: '0'\n"},
		{"same values share", "PATCH", cms + "/cm?fieldManager=bob", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  x: '1'\n"},
		{"force takes over", "PATCH", cms + "/cm?fieldManager=bob&force=true", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  y: '5'\n"},
		{"alice drops y, keeps x", "PATCH", cms + "/cm?fieldManager=alice", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {team: a}\ndata:\n  x: '1'\n"},
		{"merge patch by a user agent", "PATCH", cms + "/cm", mergePatch, `{"data":{"m":"1"}}`},
		{"update with a fieldManager", "PUT", cms + "/cm?fieldManager=carol", jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"team":"a"}},"data":{"x":"1","y":"5","m":"1","c":"7"}}`},
		{"apply of another version", "PATCH", cms + "/cm?fieldManager=alice", apply, "apiVersion: v2\nkind: ConfigMap\nmetadata:\n  name: cm\n"},
		{"apply of another kind", "PATCH", cms + "/cm?fieldManager=alice", apply, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cm\n"},
		{"apply without kind", "PATCH", cms + "/cm?fieldManager=alice", apply, "apiVersion: v1\nmetadata:\n  name: cm\n"},
		{"apply of another name", "PATCH", cms + "/cm?fieldManager=alice", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"},
		{"apply creating without a name", "PATCH", cms + "/noname?fieldManager=alice", apply, "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n"},
		{"apply of bad YAML", "PATCH", cms + "/cm?fieldManager=alice", apply, "a: [\n"},
		{"apply of a list", "PATCH", cms + "/cm?fieldManager=alice", apply, "- a\n- b\n"},
		{"apply unknown field strict", "PATCH", cms + "/cm?fieldManager=alice&fieldValidation=Strict", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\nbogus: 1\n"},
		{"apply wrong type", "PATCH", cms + "/cm?fieldManager=alice", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata: [1]\n"},
		{"clear managedFields", "PATCH", cms + "/cm", mergePatch, `{"metadata":{"managedFields":[{}]}}`},
		{"apply after clearing", "PATCH", cms + "/cm?fieldManager=alice", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  x: '2'\n"},
		{"create with a fieldManager", "POST", cms + "?fieldManager=dave", jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm2"},"data":{"a":"1"}}`},
		{"bad fieldManager on create", "POST", cms + "?fieldManager=%01", jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm3"}}`},

		{"apply deployment", "PATCH", deps + "/d?fieldManager=alice", apply, dep("      - name: web\n        image: nginx\n")},
		{"second manager adds a container", "PATCH", deps + "/d?fieldManager=bob", apply, dep("      - name: side\n        image: busybox\n")},
		{"container image conflict", "PATCH", deps + "/d?fieldManager=bob", apply, dep("      - name: web\n        image: httpd\n")},
		{"strategic patch records", "PATCH", deps + "/d?fieldManager=erin", "application/strategic-merge-patch+json", `{"spec":{"replicas":3}}`},
		{"apply replicas conflicts with erin", "PATCH", deps + "/d?fieldManager=alice", apply, dep("      - name: web\n        image: nginx\n") + "  replicas: 2\n"},
		{"status apply", "PATCH", deps + "/d/status?fieldManager=ctrl", apply, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nstatus:\n  replicas: 4\n"},
		{"apply dry-run", "PATCH", deps + "/d?fieldManager=zed&dryRun=All", apply, dep("      - name: web\n        image: nginx\n        ports:\n        - containerPort: 80\n")},

		{"apply custom resource", "PATCH", dials + "/k?fieldManager=alice", apply, "apiVersion: " + group + "/v1\nkind: Dial\nmetadata:\n  name: k\nspec:\n  level: 3\n  tags: [a, b]\n  ports:\n  - {name: http, port: 80}\n"},
		{"custom resource set and map", "PATCH", dials + "/k?fieldManager=bob", apply, "apiVersion: " + group + "/v1\nkind: Dial\nmetadata:\n  name: k\nspec:\n  tags: [c]\n  ports:\n  - {name: https, port: 443}\n"},
		{"custom resource conflict", "PATCH", dials + "/k?fieldManager=bob", apply, "apiVersion: " + group + "/v1\nkind: Dial\nmetadata:\n  name: k\nspec:\n  level: 4\n"},
		{"custom resource status apply", "PATCH", dials + "/k/status?fieldManager=ctrl", apply, "apiVersion: " + group + "/v1\nkind: Dial\nmetadata:\n  name: k\nstatus:\n  ok: true\n"},
		{"custom resource merge patch", "PATCH", dials + "/k", mergePatch, `{"spec":{"level":5}}`},
		{"custom resource of another kind", "PATCH", dials + "/k?fieldManager=alice", apply, "apiVersion: " + group + "/v1\nkind: Knob\nmetadata:\n  name: k\n"},
		// A pod subresource's write is recorded with its subresource, as
		// kube's installer gives each subresource's path a field manager
		// of its own; a binding is not recorded (it writes the pod itself).
		{"pod", "POST", pods, jsonCT, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pd"},"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"100m","memory":"10Mi"},"limits":{"cpu":"100m","memory":"10Mi"}}}]}}`},
		{"ephemeral containers patch", "PATCH", pods + "/pd/ephemeralcontainers?fieldManager=dbg", smp, `{"spec":{"ephemeralContainers":[{"name":"e","image":"x"}]}}`},
		{"ephemeral containers apply", "PATCH", pods + "/pd/ephemeralcontainers?fieldManager=dbg2", apply, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pd\nspec:\n  ephemeralContainers:\n  - {name: e2, image: x}\n"},
		{"ephemeral containers apply of a status", "PATCH", pods + "/pd/ephemeralcontainers?fieldManager=dbg3", apply, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pd\nspec:\n  ephemeralContainers:\n  - {name: e2, image: x}\n  - {name: e3, image: x}\nstatus:\n  message: hi\n"},
		{"resize patch", "PATCH", pods + "/pd/resize?fieldManager=rsz", smp, `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}`},
		{"node", "POST", "/api/v1/nodes", jsonCT, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + node + `"}}`},
		{"binding", "POST", pods + "/pd/binding?fieldManager=sched", jsonCT, `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"pd"},"target":{"kind":"Node","name":"` + node + `"}}`},
		{"final pod", "GET", pods + "/pd", "", ""},
		{"final configmap", "GET", cms + "/cm", "", ""},
		{"final deployment", "GET", deps + "/d", "", ""},
		{"final custom resource", "GET", dials + "/k", "", ""},
	})
}
