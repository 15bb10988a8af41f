package server

import (
	"strings"
	"testing"
)

// TestPodBinding: POST bindings and pods/{name}/binding set the pod's
// node as kube's BindingREST does, answer kube's 201 Success, and refuse
// a second binding, a missing pod and a name mismatch as kube.
func TestPodBinding(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", podPath, testPod("a"))
	e.must(201, "POST", podPath, testPod("b"))
	bind := func(pod, node string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Binding",
			"metadata": map[string]any{"name": pod, "annotations": map[string]any{"k": "v"}},
			"target":   map[string]any{"apiVersion": "v1", "kind": "Node", "name": node}}
	}
	st := e.must(201, "POST", "/api/v1/namespaces/default/bindings", bind("a", "n1"))
	if st["kind"] != "Status" || st["status"] != "Success" || num(st["code"]) != 201 {
		t.Fatalf("binding answer: %v", st)
	}
	p := e.must(200, "GET", podPath+"/a", nil)
	if path(p, "spec", "nodeName") != "n1" || path(p, "metadata", "annotations", "k") != "v" {
		t.Fatalf("bound pod: %v", p)
	}
	conds, _ := path(p, "status", "conditions").([]any)
	if len(conds) != 1 || conds[0].(map[string]any)["type"] != "PodScheduled" || conds[0].(map[string]any)["status"] != "True" {
		t.Fatalf("conditions: %v", conds)
	}
	st = e.expectStatus(409, "Conflict", `Operation cannot be fulfilled on pods/binding "a": pod a is already assigned to node "n1"`,
		"POST", podPath+"/a/binding", bind("a", "n2"))
	_ = st
	e.expectStatus(400, "BadRequest", "name in URL does not match name in Binding object", "POST", podPath+"/a/binding", bind("b", "n2"))
	e.must(201, "POST", podPath+"/b/binding", bind("b", "n2"))
	if p := e.must(200, "GET", podPath+"/b", nil); path(p, "spec", "nodeName") != "n2" {
		t.Fatalf("pods/binding: %v", p)
	}
	// The Binding's uid and resourceVersion are preconditions on the pod.
	c := e.must(201, "POST", podPath, testPod("c"))
	stale := bind("c", "n3")
	stale["metadata"].(map[string]any)["resourceVersion"] = "1"
	storageErr := `Operation cannot be fulfilled on pods "c": StorageError: invalid object, Code: 4, Key: /registry/pods/default/c, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: `
	e.expectStatus(409, "Conflict", storageErr+"ResourceVersion in precondition: 1, ResourceVersion in object meta: "+path(c, "metadata", "resourceVersion").(string),
		"POST", podPath+"/c/binding", stale)
	other := bind("c", "n3")
	other["metadata"].(map[string]any)["uid"] = "not-the-pods-uid"
	e.expectStatus(409, "Conflict", storageErr+"UID in precondition: not-the-pods-uid, UID in object meta: "+path(c, "metadata", "uid").(string),
		"POST", podPath+"/c/binding", other)
	fresh := bind("c", "n3")
	fresh["metadata"].(map[string]any)["resourceVersion"] = path(c, "metadata", "resourceVersion")
	fresh["metadata"].(map[string]any)["uid"] = path(c, "metadata", "uid")
	e.must(201, "POST", podPath+"/c/binding", fresh)
	e.expectStatus(404, "NotFound", `pods "nope" not found`, "POST", podPath+"/nope/binding", bind("nope", "n"))
	e.expectStatus(405, "MethodNotAllowed", "", "GET", podPath+"/a/binding", nil)
	e.expectStatus(405, "MethodNotAllowed", "", "GET", "/api/v1/namespaces/default/bindings", nil)
	// An invalid binding: kube's 500 with the validation message.
	r := e.do("POST", "/api/v1/namespaces/default/bindings", bind("a", ""))
	if r.code != 500 || !strings.Contains(string(r.body), "target.name") {
		t.Fatalf("invalid binding: %d %s", r.code, r.body)
	}
}

// TestComponentStatuses: kube's read-only list: etcd-0 healthy (this
// server's storage), the controller manager and scheduler probed where
// kube probes them; the deprecation warning; no writes.
func TestComponentStatuses(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/api/v1/componentstatuses", nil)
	if r.code != 200 || !strings.Contains(r.hdr.Get("Warning"), "v1 ComponentStatus is deprecated in v1.19+") {
		t.Fatalf("list: %d %v %s", r.code, r.hdr, r.body)
	}
	l := r.json(t)
	if l["kind"] != "ComponentStatusList" || len(l["items"].([]any)) != 3 {
		t.Fatalf("list: %v", l)
	}
	etcd := e.must(200, "GET", "/api/v1/componentstatuses/etcd-0", nil)
	c := path(etcd, "conditions").([]any)[0].(map[string]any)
	if etcd["kind"] != "ComponentStatus" || c["type"] != "Healthy" || c["status"] != "True" || c["message"] != "ok" {
		t.Fatalf("etcd-0: %v", etcd)
	}
	e.expectStatus(404, "NotFound", `componentstatus "nope" not found`, "GET", "/api/v1/componentstatuses/nope", nil)
	e.expectStatus(405, "MethodNotAllowed", "", "POST", "/api/v1/componentstatuses", map[string]any{"metadata": map[string]any{"name": "x"}})
	tbl := e.must(200, "GET", "/api/v1/componentstatuses/etcd-0", nil, "Accept", tableAccept)
	if rows, _ := tbl["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["cells"].([]any)[1] != "Healthy" {
		t.Fatalf("table: %v", tbl)
	}
	tbl = e.must(200, "GET", "/api/v1/componentstatuses", nil, "Accept", tableAccept)
	if rows, _ := tbl["rows"].([]any); len(rows) != 3 || tbl["columnDefinitions"].([]any)[1].(map[string]any)["name"] != "Status" {
		t.Fatalf("list table: %v", tbl)
	}
}

// TestPodSubresources: ephemeralcontainers and resize update the pod with
// kube's strategies: each changes only its part.
func TestPodSubresources(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", podPath, testPod("p"))
	got := e.must(200, "PATCH", podPath+"/p/ephemeralcontainers",
		`{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox","targetContainerName":"c"}],"activeDeadlineSeconds":5}}`,
		"Content-Type", jsonMerge)
	ecs, _ := path(got, "spec", "ephemeralContainers").([]any)
	if len(ecs) != 1 || path(got, "spec", "activeDeadlineSeconds") != nil {
		t.Fatalf("ephemeralcontainers: %v", got["spec"])
	}
	// The main resource may not add them.
	e.expectStatus(422, "Invalid", "", "PATCH", podPath+"/p",
		`{"spec":{"ephemeralContainers":[{"name":"debug2","image":"busybox"}]}}`, "Content-Type", jsonMerge)
	e.must(200, "GET", podPath+"/p/resize", nil)
	e.expectStatus(404, "NotFound", "", "GET", podPath+"/p/bogus", nil)
}
