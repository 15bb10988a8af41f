package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// deleteCRD DELETEs the CRD name (body: DeleteOptions or nil) and waits,
// by watch, until its finalizer has deleted it; it returns the DELETE's
// answer (the CRD marked for deletion).
func (e *env) deleteCRD(name string, body any) map[string]any {
	e.t.Helper()
	rv := path(e.must(200, "GET", crdPath, nil), "metadata", "resourceVersion").(string)
	w := e.watch(crdPath + "?watch=1&timeoutSeconds=60&fieldSelector=metadata.name%3D" + name + "&resourceVersion=" + rv)
	defer w.close()
	ans := e.must(200, "DELETE", crdPath+"/"+name, body)
	for {
		ev, ok := w.next()
		if !ok {
			e.t.Fatalf("watch ended before CRD %s was deleted", name)
		}
		if ev.Type == "DELETED" {
			return ans
		}
	}
}

// crdDeletion is a CRD's deletion state: deletionTimestamp set or not,
// deletionGracePeriodSeconds, finalizers, its Terminating condition's
// reason, and whether kube-apiserver's managedFields entry owns that
// condition.
func crdDeletion(m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	reason := "-"
	if c := condition(m, "Terminating"); c != nil {
		reason = c["status"].(string) + " " + c["reason"].(string)
	}
	mfs, _ := json.Marshal(md["managedFields"])
	owned := strings.Contains(string(mfs), `"manager":"kube-apiserver"`) && strings.Contains(string(mfs), `k:{\"type\":\"Terminating\"}`)
	fins, _ := json.Marshal(md["finalizers"])
	b, _ := json.Marshal(map[string]any{"deleting": md["deletionTimestamp"] != nil, "grace": md["deletionGracePeriodSeconds"],
		"finalizers": string(fins), "terminating": reason, "recorded": owned})
	return string(b)
}

// TestCRDDeleteByFinalizer: a CRD's DELETE is kube-apiserver's: a dry run
// answers the CRD as it would be marked and changes nothing; the DELETE
// answers it with a deletionTimestamp, the customresourcecleanup
// finalizer and Terminating InstanceDeletionPending (unrecorded in
// managedFields); the finalizer's status update follows (Terminating
// InstanceDeletionInProgress, recorded for kube-apiserver), its custom
// resources are deleted (one with a finalizer marked, holding the CRD),
// creates are refused with kube's 403, the resource is still served and
// discovered without the verbs that write; a second DELETE is the generic
// store's (deletionGracePeriodSeconds 0); once the custom resource's
// finalizer is removed the CRD goes, its DELETED event the last state
// stored, and its resource is no longer served. What kube-apiserver
// v1.37.2 answers (e2e.TestKubeCRDDeleteSameAsOurs compares them side by
// side).
func TestCRDDeleteByFinalizer(t *testing.T) {
	e := newEnv(t)
	const name = "widgets.example.com"
	base := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	e.must(201, "POST", base, widget("free", "v1"))
	held := widget("held", "v1")
	held["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
	e.must(201, "POST", base, held)
	rv := path(e.must(200, "GET", crdPath, nil), "metadata", "resourceVersion").(string)
	crdW := e.watch(crdPath + "?watch=1&timeoutSeconds=60&fieldSelector=metadata.name%3D" + name + "&resourceVersion=" + rv)
	crW := e.watch(base + "?watch=1&timeoutSeconds=60&resourceVersion=" + rv)
	check := func(what string, m map[string]any, want string) {
		t.Helper()
		if got := crdDeletion(m); got != want {
			t.Fatalf("%s:\n got: %s\nwant: %s", what, got, want)
		}
	}
	const (
		pending    = `{"deleting":true,"finalizers":"[\"customresourcecleanup.apiextensions.k8s.io\"]","grace":null,"recorded":false,"terminating":"True InstanceDeletionPending"}`
		inProgress = `{"deleting":true,"finalizers":"[\"customresourcecleanup.apiextensions.k8s.io\"]","grace":null,"recorded":true,"terminating":"True InstanceDeletionInProgress"}`
	)
	check("dry run", e.must(200, "DELETE", crdPath+"/"+name+"?dryRun=All", nil), pending)
	check("after the dry run", e.must(200, "GET", crdPath+"/"+name, nil), `{"deleting":false,"finalizers":"null","grace":null,"recorded":false,"terminating":"-"}`)

	check("delete", e.must(200, "DELETE", crdPath+"/"+name, nil), pending)
	check("first event", crdW.expect("MODIFIED", name).Object, pending)
	check("finalizer's event", crdW.expect("MODIFIED", name).Object, inProgress)
	var crEvents []string
	for range 2 {
		ev, _ := crW.next()
		crEvents = append(crEvents, ev.Type+" "+path(ev.Object, "metadata", "name").(string))
	}
	slices.Sort(crEvents)
	if got := strings.Join(crEvents, ", "); got != "DELETED free, MODIFIED held" {
		t.Fatalf("custom resources' events: %s", got)
	}
	if m := e.must(200, "GET", base+"/held", nil); path(m, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("held not marked: %v", m)
	}
	e.expectStatus(403, "Forbidden", `widgets.example.com "late" is forbidden: create not allowed while custom resource definition is terminating`,
		"POST", base, widget("late", "v1"))
	if l := e.must(200, "GET", base, nil); len(l["items"].([]any)) != 1 {
		t.Fatalf("list while terminating: %v", l["items"])
	}
	disc := e.must(200, "GET", "/apis/example.com/v1", nil)
	for _, r := range disc["resources"].([]any) {
		if r := r.(map[string]any); r["name"] == "widgets" {
			if v, _ := json.Marshal(r["verbs"]); string(v) != `["delete","deletecollection","get","list","watch"]` {
				t.Fatalf("verbs while terminating: %s", v)
			}
		}
	}
	again := strings.Replace(inProgress, `"grace":null`, `"grace":0`, 1)
	check("delete again", e.must(200, "DELETE", crdPath+"/"+name, nil), again)
	check("its event", crdW.expect("MODIFIED", name).Object, again)

	e.must(200, "PATCH", base+"/held", `{"metadata":{"finalizers":null}}`, "Content-Type", "application/merge-patch+json")
	check("deleted", crdW.expect("DELETED", name).Object, again)
	e.expectNoRoute("GET", base)
	e.expectStatus(404, "NotFound", "", "GET", crdPath+"/"+name, nil)
}

// TestCRDServedWithNamesAccepted: a CRD whose names are accepted but
// that is not established is served as kube's crdHandler serves it, not
// discovered: one whose conversion webhook's caBundle does not parse
// (Established False InvalidCABundle) answers every request with kube's
// 500, as kube has no serving info for it.
func TestCRDServedWithNamesAccepted(t *testing.T) {
	e := newEnv(t)
	crd := widgetCRD("Namespaced", "v1")
	crd["spec"].(map[string]any)["conversion"] = map[string]any{"strategy": "Webhook", "webhook": map[string]any{
		"conversionReviewVersions": []any{"v1"},
		"clientConfig":             map[string]any{"url": "https://127.0.0.1:1/convert", "caBundle": "bm90IGEgY2VydA=="}}}
	e.must(201, "POST", crdPath, crd)
	got := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
	if c := condition(got, "Established"); c["reason"] != "InvalidCABundle" {
		t.Fatalf("Established: %v", c)
	}
	base := "/apis/example.com/v1/namespaces/default/widgets"
	e.expectStatus(500, "InternalError", "Internal error occurred: error resolving resource", "GET", base, nil)
	e.expectStatus(500, "InternalError", "Internal error occurred: error resolving resource", "POST", base, widget("w", "v1"))
	if names := discoveryNames(t, e, "/apis/example.com/v1"); len(names) != 0 {
		t.Fatalf("discovered: %v", names)
	}
	if _, ok := e.must(200, "GET", "/openapi/v3", nil)["paths"].(map[string]any)["apis/example.com/v1"]; ok {
		t.Fatal("in /openapi/v3")
	}
	// Deleted at once: never established, it has no custom resources
	// to delete (NeverEstablished).
	e.deleteCRD("widgets.example.com", nil)
}
