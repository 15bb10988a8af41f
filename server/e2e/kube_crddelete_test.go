package e2e

import (
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestKubeCRDDeleteSameAsOurs: a CRD's deletion is kube-apiserver's
// finalizer sequence on both servers. A dry-run DELETE answers the CRD as
// it would be marked and changes nothing; failed uid and resourceVersion
// preconditions are kube's 409s; the DELETE answers the CRD with a
// deletionTimestamp, the customresourcecleanup finalizer and Terminating
// InstanceDeletionPending (managedFields untouched); the finalizer
// controller's status update (Terminating InstanceDeletionInProgress,
// recorded for kube-apiserver, Update, status) follows, and the custom
// resources are deleted: one without finalizers goes, one with a
// finalizer is marked and holds the CRD. Meanwhile the resource is served
// but for creates (kube's 403), discovery lists it without the verbs that
// write objects, and a second DELETE answers the CRD as marked. Once a
// client removes the custom resource's finalizer the CRD goes. A watcher
// of each CRD sees the same MODIFIED events, then DELETED; a CRD without
// custom resources goes the same way.
func TestKubeCRDDeleteSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	want := crdDeleteScript(t, kube, ns)
	compareLogs(t, crdDeleteScript(t, ours, ns), want)
}

func crdDeleteScript(t *testing.T, c *rawClient, ns string) []string {
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	group := ns + ".example.com"
	var log []string
	step := func(what string, code int, m map[string]any) {
		log = append(log, what+": "+http.StatusText(code)+" "+crdDeleteView(m))
	}
	crdOf := func(plural, kind string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + "." + group + `"},
		"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"` + plural + `","kind":"` + kind + `"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	}
	name := "probes." + group
	base := "/apis/" + group + "/v1/namespaces/" + ns + "/probes"
	createCRD(t, c, crdOf("probes", "Probe"), name, base)
	t.Cleanup(func() { c.do("PATCH", base+"/held", mergePatch, `{"metadata":{"finalizers":null}}`) })
	for _, cr := range []string{
		`{"apiVersion":"` + group + `/v1","kind":"Probe","metadata":{"name":"free"}}`,
		`{"apiVersion":"` + group + `/v1","kind":"Probe","metadata":{"name":"held","finalizers":["example.com/hold"]}}`,
	} {
		if code, m := c.do("POST", base, jsonCT, cr); code != http.StatusCreated {
			t.Fatalf("%s: %d %v", cr, code, m)
		}
	}
	rv := c.listRV(crds)
	code, crd := c.do("GET", crds+"/"+name, "", "")
	if code != http.StatusOK {
		t.Fatalf("crd: %d %v", code, crd)
	}
	md := crd["metadata"].(map[string]any)
	uid, crdRV := md["uid"].(string), md["resourceVersion"].(string)
	masked := func(m map[string]any) string {
		s, _ := m["message"].(string)
		// Only where they stand: the digits of a resourceVersion can
		// also be in the group's name (lw-e2e-602036-… held "20").
		return strings.NewReplacer(group, "GROUP", "object meta: "+uid, "object meta: UID",
			"object meta: "+crdRV, "object meta: RV").Replace(s)
	}

	code, m := c.do("DELETE", crds+"/"+name+"?dryRun=All", "", "")
	step("dry-run delete", code, m)
	code, m = c.do("GET", crds+"/"+name, "", "")
	step("after dry run", code, m)
	for _, pre := range []string{`{"uid":"wrong"}`, `{"resourceVersion":"1"}`} {
		code, m = c.do("DELETE", crds+"/"+name, jsonCT, `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":`+pre+`}`)
		log = append(log, "precondition "+pre+": "+http.StatusText(code)+" "+masked(m))
	}

	code, m = c.do("DELETE", crds+"/"+name, "", "")
	step("delete", code, m)
	// The finalizer controller deletes the custom resources; the one
	// with a finalizer holds the CRD.
	code, m = c.poll(base+"/held", func(m map[string]any) bool { return jsonAt(m, "metadata.deletionTimestamp") != "-" })
	log = append(log, "held: "+http.StatusText(code)+" "+crDeleteView(m))
	code, m = c.poll(crds+"/"+name, func(m map[string]any) bool {
		return strings.Contains(jsonOf(m["status"]), "InstanceDeletionInProgress")
	})
	step("in progress", code, m)
	code, _ = c.do("GET", base+"/free", "", "")
	log = append(log, "free: "+http.StatusText(code))
	code, m = c.do("POST", base, jsonCT, `{"apiVersion":"`+group+`/v1","kind":"Probe","metadata":{"name":"late"}}`)
	log = append(log, "create: "+http.StatusText(code)+" "+jsonOf(m))
	code, m = c.do("GET", base, "", "")
	var names []string
	items, _ := m["items"].([]any)
	for _, it := range items {
		names = append(names, jsonAt(it.(map[string]any), "metadata.name"))
	}
	log = append(log, "list: "+http.StatusText(code)+" "+strings.Join(names, ","))
	// kube's discovery controller drops the writing verbs a moment later.
	disc := func() string {
		_, m := c.do("GET", "/apis/"+group+"/v1", "", "")
		res, _ := m["resources"].([]any)
		var out []string
		for _, r := range res {
			r := r.(map[string]any)
			out = append(out, jsonOf(r["name"])+jsonOf(r["verbs"]))
		}
		return strings.Join(out, " ")
	}
	deadline := time.Now().Add(30 * time.Second)
	for strings.Contains(disc(), "create") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling for kube's discovery controller
	}
	log = append(log, "discovery: "+disc())
	code, m = c.do("DELETE", crds+"/"+name, "", "")
	step("delete again", code, m)
	code, m = c.do("PATCH", base+"/held", mergePatch, `{"metadata":{"finalizers":null}}`)
	log = append(log, "finalizer removed: "+http.StatusText(code)+" "+crDeleteView(m))
	log = append(log, "gone: "+c.pollGone(crds+"/"+name))
	code, _ = c.do("GET", base, "", "")
	log = append(log, "resource after: "+http.StatusText(code))
	log = append(log, c.crdEvents(crds, name, rv)...)

	// A CRD without custom resources.
	empty := "empties." + group
	createCRD(t, c, crdOf("empties", "Empty"), empty, "/apis/"+group+"/v1/namespaces/"+ns+"/empties")
	rv = c.listRV(crds)
	code, m = c.do("DELETE", crds+"/"+empty, "", "")
	step("delete empty", code, m)
	log = append(log, "empty gone: "+c.pollGone(crds+"/"+empty))
	log = append(log, c.crdEvents(crds, empty, rv)...)

	// A CRD whose names are accepted but that is not established (its
	// conversion webhook's caBundle is invalid): served, not discovered.
	hooked := "hooks." + group
	hookBase := "/apis/" + group + "/v1/namespaces/" + ns + "/hooks"
	code, m = c.do("POST", crds, jsonCT, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"`+hooked+`"},
		"spec":{"group":"`+group+`","scope":"Namespaced","names":{"plural":"hooks","kind":"Hook"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}],
		"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:1/convert","caBundle":"bm90IGEgY2VydA=="}}}}}`)
	if code != http.StatusCreated {
		t.Fatalf("hooked crd: %d %v", code, m)
	}
	t.Cleanup(func() { c.do("DELETE", crds+"/"+hooked, "", "") })
	code, m = c.poll(crds+"/"+hooked, func(m map[string]any) bool { return strings.Contains(jsonOf(m["status"]), "InvalidCABundle") })
	step("not established", code, m)
	code, m = c.do("GET", hookBase, "", "")
	log = append(log, "hooks list: "+http.StatusText(code)+" "+jsonAt(m, "kind")+" "+jsonAt(m, "message"))
	code, m = c.do("POST", hookBase, jsonCT, `{"apiVersion":"`+group+`/v1","kind":"Hook","metadata":{"name":"h"}}`)
	log = append(log, "hook create: "+http.StatusText(code)+" "+jsonAt(m, "metadata.name")+" "+jsonAt(m, "message"))
	log = append(log, "discovery: "+disc())
	return log
}

// pollGone GETs path until it is 404 (30 s at most) and says so.
func (c *rawClient) pollGone(path string) string {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := c.do("GET", path, "", "")
		if code == http.StatusNotFound || time.Now().After(deadline) {
			return http.StatusText(code)
		}
		time.Sleep(50 * time.Millisecond) // polling for kube's finalizer controller
	}
}

// crdEvents are the events of a watch of the CRD name from rv (ended by
// timeoutSeconds), each with its crdDeleteView.
func (c *rawClient) crdEvents(crds, name, rv string) []string {
	c.t.Helper()
	events := c.watchEvents(crds+"?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3D"+name+"&resourceVersion="+rv, crdDeleteView)
	for i, e := range events {
		events[i] = "event " + e
	}
	return events
}

// crdDeleteView is what a CRD's deletion changes: whether it has a
// deletionTimestamp, its grace period, finalizers and generation, its
// status (times masked) and managedFields (as a set, without times); a
// Status's code, reason and message.
func crdDeleteView(m map[string]any) string {
	if m["kind"] == "Status" {
		return jsonOf(map[string]any{"code": m["code"], "reason": m["reason"], "message": m["message"]})
	}
	md, _ := m["metadata"].(map[string]any)
	mfs, _ := md["managedFields"].([]any)
	for _, e := range mfs {
		if e, ok := e.(map[string]any); ok {
			delete(e, "time")
		}
	}
	sort.Slice(mfs, func(i, j int) bool { return jsonOf(mfs[i]) < jsonOf(mfs[j]) })
	st, _ := m["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, cd := range conds {
		if cd, ok := cd.(map[string]any); ok && cd["lastTransitionTime"] != nil {
			cd["lastTransitionTime"] = "T"
		}
	}
	return jsonOf(map[string]any{
		"deleting": md["deletionTimestamp"] != nil, "grace": md["deletionGracePeriodSeconds"],
		"finalizers": md["finalizers"], "generation": md["generation"], "status": st, "managedFields": mfs,
	})
}

// crDeleteView is a custom resource's deletion state.
func crDeleteView(m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	return jsonOf(map[string]any{
		"deleting": md["deletionTimestamp"] != nil, "grace": md["deletionGracePeriodSeconds"],
		"finalizers": md["finalizers"], "generation": md["generation"],
	})
}

// TestKubeCRDDeleteCollectionSameAsOurs: a deletecollection of CRDs is
// kube's generic store's DeleteCollection on both servers, which deletes
// each CRD through the generic store's Delete and not the CRD REST's, so
// without the cleanup finalizer: a dry run answers the list and changes
// nothing; the delete answers the list of the CRDs as they were, and
// each is gone at once (a watcher sees DELETED and no MODIFIED); a CRD
// with a finalizer of its own is only marked. The custom resources stay
// in storage: the same CRD created again serves the one made before.
func TestKubeCRDDeleteCollectionSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	want := crdDeleteCollectionScript(t, kube, ns)
	compareLogs(t, crdDeleteCollectionScript(t, ours, ns), want)
}

func crdDeleteCollectionScript(t *testing.T, c *rawClient, ns string) []string {
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	group := ns + ".example.com"
	sel := "labelSelector=deletecollection%3D" + ns
	var log []string
	crdOf := func(plural, kind, finalizers string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + "." + group + `",
		"labels":{"deletecollection":"` + ns + `"}` + finalizers + `},
		"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"` + plural + `","kind":"` + kind + `"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	}
	listView := func(code int, m map[string]any) string {
		if m["kind"] == "Status" {
			return http.StatusText(code) + " " + crdDeleteView(m)
		}
		var items []string
		its, _ := m["items"].([]any)
		for _, it := range its {
			it := it.(map[string]any)
			items = append(items, jsonAt(it, "metadata.name")+" "+crdDeleteView(it))
		}
		return http.StatusText(code) + " " + jsonAt(m, "kind") + " [" + strings.Join(items, ", ") + "]"
	}
	established := func(m map[string]any) bool {
		return strings.Contains(jsonOf(m["status"]), `"reason":"InitialNamesAccepted","status":"True","type":"Established"`)
	}
	kinds := map[string]string{"probes": "Probe", "empties": "Empty", "helds": "Held"}
	for _, plural := range []string{"empties", "helds", "probes"} {
		fin := ""
		if plural == "helds" {
			fin = `,"finalizers":["example.com/hold"]`
		}
		createCRD(t, c, crdOf(plural, kinds[plural], fin), plural+"."+group, "/apis/"+group+"/v1/namespaces/"+ns+"/"+plural)
		if code, m := c.poll(crds+"/"+plural+"."+group, established); !established(m) {
			t.Fatalf("%s not established: %d %v", plural, code, m)
		}
	}
	t.Cleanup(func() { c.do("PATCH", crds+"/helds."+group, mergePatch, `{"metadata":{"finalizers":null}}`) })
	probes := "/apis/" + group + "/v1/namespaces/" + ns + "/probes"
	if code, m := c.do("POST", probes, jsonCT, `{"apiVersion":"`+group+`/v1","kind":"Probe","metadata":{"name":"kept"},"spec":{"a":1}}`); code != http.StatusCreated {
		t.Fatalf("probe: %d %v", code, m)
	}
	rv := c.listRV(crds)

	code, m := c.do("DELETE", crds+"?dryRun=All&"+sel, "", "")
	log = append(log, "dry-run deletecollection: "+listView(code, m))
	code, m = c.do("GET", crds+"?"+sel, "", "")
	log = append(log, "after dry run: "+listView(code, m))
	code, m = c.do("DELETE", crds+"?"+sel, "", "")
	log = append(log, "deletecollection: "+listView(code, m))
	code, m = c.do("GET", crds+"?"+sel, "", "")
	log = append(log, "after: "+listView(code, m))
	for _, e := range c.watchEvents(crds+"?watch=1&timeoutSeconds=1&"+sel+"&resourceVersion="+rv, func(m map[string]any) string {
		return jsonAt(m, "metadata.name") + " " + crdDeleteView(m)
	}) {
		log = append(log, "event "+e)
	}

	// The custom resources are still stored: the same CRD again serves
	// the one made before.
	createCRD(t, c, crdOf("probes", "Probe", ""), "probes."+group, probes)
	code, m = c.do("GET", probes+"/kept", "", "")
	log = append(log, "probe after the CRD is created again: "+http.StatusText(code)+" "+jsonAt(m, "metadata.name")+" "+jsonAt(m, "spec"))
	return log
}
