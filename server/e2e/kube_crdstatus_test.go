package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestKubeCRDStatusSameAsOurs: a CRD's status is written as
// kube-apiserver's naming and establishing controllers write it, by
// status updates recorded in managedFields for "kube-apiserver"
// (operation Update, subresource status): the create's answer has the
// status kube's strategy leaves (no accepted names, no conditions), a GET
// once the CRD is served has the names, the NamesAccepted and Established
// conditions and both entries in kube's order; an update adding a short
// name and a category is answered with the names accepted before, then
// accepted by another status update; a client's status write replacing
// the conditions takes them from kube-apiserver's entry. A watcher of the
// CRD sees the same events on both: ADDED, the naming controller's
// MODIFIED (Established False, Installing), the establishing
// controller's, the update's, the naming controller's again, the status
// write's. serve writes the controllers' updates before it answers the
// write, kube a moment after.
func TestKubeCRDStatusSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	want := crdStatusScript(t, kube, ns)
	compareLogs(t, crdStatusScript(t, ours, ns), want)
}

func crdStatusScript(t *testing.T, c *rawClient, ns string) []string {
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	group := ns + ".example.com"
	name := "probes." + group
	t.Cleanup(func() { c.do("DELETE", crds+"/"+name, "", "") })
	rv := c.listRV(crds)
	var log []string
	step := func(what string, code int, m map[string]any) {
		log = append(log, what+": "+http.StatusText(code)+" "+crdStatusView(m))
	}
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},
		"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"probes","kind":"Probe"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	code, m := c.do("POST", crds, jsonCT, crd)
	step("create", code, m)
	c.waitOK("/apis/" + group + "/v1/probes")
	// kube serves the resource once its names are accepted; its
	// establishing controller writes Established True a moment later.
	code, m = c.poll(crds+"/"+name, crdEstablished)
	step("established", code, m)
	code, m = c.do("PATCH", crds+"/"+name, mergePatch, `{"spec":{"names":{"shortNames":["pr"],"categories":["all"]}}}`)
	step("names added", code, m)
	// kube's naming controller accepts them a moment later.
	code, m = c.poll(crds+"/"+name, func(m map[string]any) bool { return jsonAt(m, "status.acceptedNames.shortNames") != "-" })
	step("names accepted", code, m)
	code, m = c.do("PATCH", crds+"/"+name+"/status?fieldManager=me", mergePatch,
		`{"status":{"conditions":[{"type":"Foo","status":"True","lastTransitionTime":"2020-01-01T00:00:00Z","reason":"R","message":"m"}]}}`)
	step("status write", code, m)
	code, m = c.do("GET", crds+"/"+name, "", "")
	step("get", code, m)
	c.caughtUp(crds)
	code, _, b := c.send("GET", crds+"?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3D"+name+"&resourceVersion="+rv, "", jsonCT, "")
	if code != http.StatusOK {
		t.Fatalf("watch: %d %s", code, b)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("watch event %q: %v", sc.Bytes(), err)
		}
		log = append(log, "event "+ev.Type+" "+crdStatusView(ev.Object))
	}
	return log
}

// poll GETs path until done holds of the object (30 s at most).
func (c *rawClient) poll(path string, done func(map[string]any) bool) (int, map[string]any) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, m := c.do("GET", path, "", "")
		if code == http.StatusOK && done(m) || time.Now().After(deadline) {
			return code, m
		}
		time.Sleep(50 * time.Millisecond) // polling for kube's controllers
	}
}

// crdEstablished says whether a CRD's Established condition is True.
func crdEstablished(m map[string]any) bool {
	st, _ := m["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, cd := range conds {
		if cd, ok := cd.(map[string]any); ok && cd["type"] == "Established" && cd["status"] == "True" {
			return true
		}
	}
	return false
}

// crdStatusView is a CRD's generation, status and managedFields (as a
// set), without times.
func crdStatusView(m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	mfs, _ := md["managedFields"].([]any)
	for _, e := range mfs {
		if e, ok := e.(map[string]any); ok {
			delete(e, "time")
		}
	}
	// Compared as a set: kube's field manager orders one operation's
	// entries by their times in seconds, on either server.
	sort.Slice(mfs, func(i, j int) bool { return jsonOf(mfs[i]) < jsonOf(mfs[j]) })
	st, _ := m["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, cd := range conds {
		if cd, ok := cd.(map[string]any); ok && cd["lastTransitionTime"] != nil {
			cd["lastTransitionTime"] = "T"
		}
	}
	b, _ := json.Marshal(map[string]any{"generation": md["generation"], "status": st, "managedFields": mfs})
	return strings.TrimSpace(string(b))
}
