package server

import (
	"fmt"
	"strings"
	"testing"
)

const mergeCT = "application/merge-patch+json"

// runningPod creates a pod on a node, Running and Ready, labelled app=a.
func runningPod(e *env, name string) {
	e.t.Helper()
	p := podJSON(name, "n1", "c")
	p["metadata"].(map[string]any)["labels"] = map[string]any{"app": "a"}
	e.must(201, "POST", "/api/v1/namespaces/default/pods", p)
	e.must(200, "PATCH", "/api/v1/namespaces/default/pods/"+name+"/status",
		`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, "Content-Type", mergeCT)
}

// pdb creates a budget selecting app=a with the given status.
func pdb(e *env, name string, allowed, current, desired int) {
	e.t.Helper()
	e.must(201, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", map[string]any{
		"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"minAvailable": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": "a"}}}})
	e.must(200, "PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/"+name+"/status",
		fmt.Sprintf(`{"status":{"observedGeneration":1,"disruptionsAllowed":%d,"currentHealthy":%d,"desiredHealthy":%d,"expectedPods":%d}}`,
			allowed, current, desired, current), "Content-Type", mergeCT)
}

func eviction(name, extra string) string {
	return `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `"}` + extra + `}`
}

// TestEviction: kube's eviction rules (compared side by side in e2e
// TestKubePodSubresources).
func TestEviction(t *testing.T) {
	e := newEnv(t)
	pods := "/api/v1/namespaces/default/pods"
	e.must(201, "POST", "/api/v1/nodes", nodeJSON("n1", "127.0.0.1", 10250))

	// No budget: the running pod is marked for deletion (graceful) with
	// the DisruptionTarget condition.
	runningPod(e, "free")
	m := e.must(201, "POST", pods+"/free/eviction", eviction("free", ""))
	if m["kind"] != "Status" || m["status"] != "Success" || m["code"] != float64(201) {
		t.Fatalf("evict: %v", m)
	}
	p := e.must(200, "GET", pods+"/free", nil)
	if path(p, "metadata", "deletionTimestamp") == nil || !strings.Contains(fmt.Sprint(path(p, "status", "conditions")), "DisruptionTarget") {
		t.Errorf("evicted pod: %v", p)
	}
	// A pending pod (no node) goes at once.
	e.must(201, "POST", pods, podJSON("pending", "", "c"))
	e.must(201, "POST", pods+"/pending/eviction", eviction("pending", ""))
	e.expectStatus(404, "NotFound", `pods "pending" not found`, "GET", pods+"/pending", nil)
	e.expectStatus(404, "NotFound", `pods "pending" not found`, "POST", pods+"/pending/eviction", eviction("pending", ""))
	e.expectStatus(400, "BadRequest", "name in URL does not match name in Eviction object", "POST", pods+"/free/eviction", eviction("other", ""))
	e.expectStatus(405, "MethodNotAllowed", "", "GET", pods+"/free/eviction", nil)

	// A budget allowing no disruption: 429 with kube's cause.
	runningPod(e, "guarded")
	pdb(e, "budget", 0, 1, 1)
	m = e.expectStatus(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.", "POST", pods+"/guarded/eviction", eviction("guarded", ""))
	if c := fmt.Sprint(path(m, "details", "causes")); !strings.Contains(c, "DisruptionBudget") || !strings.Contains(c, "The disruption budget budget needs 1 healthy pods and has 1 currently") {
		t.Errorf("429 causes: %v", m)
	}
	// A budget allowing one: a dry run changes nothing; the eviction
	// takes the disruption and records the pod.
	e.must(200, "PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/budget/status",
		`{"status":{"disruptionsAllowed":1,"currentHealthy":2}}`, "Content-Type", mergeCT)
	e.must(201, "POST", pods+"/guarded/eviction?dryRun=All", eviction("guarded", ""))
	e.must(201, "POST", pods+"/guarded/eviction", eviction("guarded", `,"deleteOptions":{"dryRun":["All"]}`))
	if p := e.must(200, "GET", pods+"/guarded", nil); path(p, "metadata", "deletionTimestamp") != nil {
		t.Fatalf("dry run deleted: %v", p)
	}
	if m := e.must(500, "POST", pods+"/guarded/eviction?dryRun=All", eviction("guarded", `,"deleteOptions":{"dryRun":["Other"]}`)); m["message"] != "Non-matching dry-run options in request and content: [All] and [Other]" {
		t.Errorf("dry runs differ: %v", m)
	}
	// As kube: the budget is taken before the delete's preconditions
	// fail.
	e.expectStatus(409, "Conflict", "", "POST", pods+"/guarded/eviction", eviction("guarded", `,"deleteOptions":{"preconditions":{"uid":"nope"}}`))
	e.must(200, "PATCH", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/budget/status",
		`{"status":{"disruptionsAllowed":1,"disruptedPods":null}}`, "Content-Type", mergeCT)
	e.must(201, "POST", pods+"/guarded/eviction", eviction("guarded", ""))
	b := e.must(200, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/budget", nil)
	if path(b, "status", "disruptionsAllowed") != float64(0) || path(b, "status", "disruptedPods", "guarded") == nil {
		t.Errorf("budget after eviction: %v", b["status"])
	}

	// Two budgets: kube's 500.
	runningPod(e, "twice")
	pdb(e, "second", 1, 2, 1)
	m = e.must(500, "POST", pods+"/twice/eviction", eviction("twice", ""))
	if m["message"] != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." || m["status"] != "Failure" {
		t.Errorf("two budgets: %v", m)
	}
}
