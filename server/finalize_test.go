package server

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const mergePatch = "application/merge-patch+json"

// fixedClock makes the server's clock a constant, so that the deletion
// timestamps it sets can be compared exactly.
func fixedClock(at time.Time) envOption {
	return func(c *Config) { c.Now = func() time.Time { return at } }
}

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func withFinalizers(obj map[string]any, fins ...string) map[string]any {
	md := obj["metadata"].(map[string]any)
	f := make([]any, len(fins))
	for i, s := range fins {
		f[i] = s
	}
	md["finalizers"] = f
	return obj
}

// finalizerLifecycle drives one object with a finalizer through DELETE
// (marked, MODIFIED), a second DELETE (nothing), refused and ignored
// writes of the deletion fields, and the removal of its last finalizer
// (DELETED), watching from its creation.
func finalizerLifecycle(t *testing.T, e *env, base, qualifiedKind string, obj map[string]any, wantGeneration any) {
	t.Helper()
	created := e.must(201, "POST", base, withFinalizers(obj, "example.com/cleanup"))
	name := path(created, "metadata", "name").(string)
	rv := path(created, "metadata", "resourceVersion").(string)
	w := e.watch(base + "?watch=1&resourceVersion=" + rv)

	del := e.must(200, "DELETE", base+"/"+name, nil)
	if del["kind"] == "Status" || path(del, "metadata", "deletionTimestamp") != testNow.Format(time.RFC3339) ||
		path(del, "metadata", "deletionGracePeriodSeconds") != float64(0) || path(del, "metadata", "resourceVersion") == rv {
		t.Fatalf("DELETE with a finalizer answered %v", del)
	}
	if g := path(del, "metadata", "generation"); g != wantGeneration {
		t.Fatalf("generation after marking: %v, want %v", g, wantGeneration)
	}
	marked := w.expect("MODIFIED", name)
	if path(marked.Object, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("MODIFIED without deletionTimestamp: %v", marked.Object)
	}
	got := e.must(200, "GET", base+"/"+name, nil)
	markedRV := path(got, "metadata", "resourceVersion")
	if markedRV != path(del, "metadata", "resourceVersion") {
		t.Fatalf("GET after DELETE: %v", got)
	}

	// A second DELETE changes nothing and answers the object.
	again := e.must(200, "DELETE", base+"/"+name, nil)
	if path(again, "metadata", "resourceVersion") != markedRV || path(again, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("second DELETE: %v", again)
	}
	// No finalizer may be added now.
	e.expectStatus(422, "Invalid", fmt.Sprintf(`%s "%s" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/other"}`, qualifiedKind, name),
		"PATCH", base+"/"+name, `{"metadata":{"finalizers":["example.com/cleanup","example.com/other"]}}`, "Content-Type", mergePatch)
	// Clearing the deletionTimestamp is ignored (an update can never
	// remove it): nothing to write.
	cleared := e.must(200, "PATCH", base+"/"+name, `{"metadata":{"deletionTimestamp":null,"deletionGracePeriodSeconds":null}}`, "Content-Type", mergePatch)
	if path(cleared, "metadata", "deletionTimestamp") == nil || path(cleared, "metadata", "resourceVersion") != markedRV {
		t.Fatalf("clearing deletionTimestamp: %v", cleared)
	}
	// Other writes still work while finalizers remain.
	e.must(200, "PATCH", base+"/"+name, `{"metadata":{"labels":{"k":"v"}}}`, "Content-Type", mergePatch)
	w.expect("MODIFIED", name)

	// Removing the last finalizer deletes it, in that write.
	last := e.must(200, "PATCH", base+"/"+name, `{"metadata":{"finalizers":null}}`, "Content-Type", mergePatch)
	if path(last, "metadata", "finalizers") != nil || path(last, "metadata", "name") != name {
		t.Fatalf("patch removing the last finalizer answered %v", last)
	}
	w.expect("DELETED", name)
	e.expectStatus(404, "NotFound", "", "GET", base+"/"+name, nil)
}

func TestFinalizerLifecycleConfigMap(t *testing.T) {
	e := newEnv(t, fixedClock(testNow))
	finalizerLifecycle(t, e, cmPath, "ConfigMap", cm("fin", nil, map[string]string{"k": "v"}), nil)
}

func TestFinalizerLifecycleCustomResource(t *testing.T) {
	e := newEnv(t, fixedClock(testNow))
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	// A custom resource has a generation: marking it deleted bumps it.
	finalizerLifecycle(t, e, "/apis/example.com/v1/namespaces/default/widgets", "Widget.example.com", widget("wfin", "v1"), float64(2))
}

func TestFinalizerRemovedByUpdate(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, withFinalizers(cm("u", nil, nil), "a/b", "c/d"))
	e.must(200, "DELETE", cmPath+"/u", nil)
	cur := e.must(200, "GET", cmPath+"/u", nil)
	// Removing one of two: still there.
	withFinalizers(cur, "c/d")
	cur = e.must(200, "PUT", cmPath+"/u", cur)
	// A PUT that tries to add one is refused.
	withFinalizers(cur, "c/d", "e/f")
	e.expectStatus(422, "Invalid", "", "PUT", cmPath+"/u", cur)
	// Removing the last: gone.
	delete(cur["metadata"].(map[string]any), "finalizers")
	e.must(200, "PUT", cmPath+"/u", cur)
	e.expectStatus(404, "NotFound", "", "GET", cmPath+"/u", nil)
}

func TestDeletionFieldsGuarded(t *testing.T) {
	e := newEnv(t)
	// Create ignores both fields.
	c := cm("g", nil, nil)
	c["metadata"].(map[string]any)["deletionTimestamp"] = "2020-01-01T00:00:00Z"
	c["metadata"].(map[string]any)["deletionGracePeriodSeconds"] = 5
	created := e.must(201, "POST", cmPath, c)
	if path(created, "metadata", "deletionTimestamp") != nil || path(created, "metadata", "deletionGracePeriodSeconds") != nil {
		t.Fatalf("create kept deletion fields: %v", created)
	}
	// An update may not set them (kube-apiserver's words, compared in
	// e2e's TestKubeWritesSameAsOurs).
	e.expectStatus(422, "Invalid", `ConfigMap "g" is invalid: metadata.deletionTimestamp: Invalid value: "2020-01-01T00:00:00Z": field is immutable`,
		"PATCH", cmPath+"/g", `{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}`, "Content-Type", mergePatch)
	e.expectStatus(422, "Invalid", `ConfigMap "g" is invalid: metadata.deletionGracePeriodSeconds: Invalid value: 5: field is immutable`,
		"PATCH", cmPath+"/g", `{"metadata":{"deletionGracePeriodSeconds":5}}`, "Content-Type", mergePatch)
	e.expectStatus(422, "Invalid", `ConfigMap "g" is invalid: metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set`,
		"PATCH", cmPath+"/g", `{"metadata":{"finalizers":["orphan","foregroundDeletion"]}}`, "Content-Type", mergePatch)
	// Once deleting, a changed timestamp is reset to the stored one.
	e.must(200, "PATCH", cmPath+"/g", `{"metadata":{"finalizers":["x/y"]}}`, "Content-Type", mergePatch)
	marked := e.must(200, "DELETE", cmPath+"/g", nil)
	moved := e.must(200, "PATCH", cmPath+"/g", `{"metadata":{"deletionTimestamp":"2099-01-01T00:00:00Z"}}`, "Content-Type", mergePatch)
	if path(moved, "metadata", "deletionTimestamp") != path(marked, "metadata", "deletionTimestamp") ||
		path(moved, "metadata", "resourceVersion") != path(marked, "metadata", "resourceVersion") {
		t.Fatalf("deletionTimestamp moved: %v", moved)
	}
	e.expectStatus(422, "Invalid", `ConfigMap "g" is invalid: metadata.deletionGracePeriodSeconds: Invalid value: 7: field is immutable`,
		"PATCH", cmPath+"/g", `{"metadata":{"deletionGracePeriodSeconds":7}}`, "Content-Type", mergePatch)
}

func TestPropagationFinalizers(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name  string
		query string
		body  any
		code  int
		fins  []any // nil: deleted
	}{
		{"orphan", "?propagationPolicy=Orphan", nil, 200, []any{"orphan"}},
		{"orphan-body", "", map[string]any{"propagationPolicy": "Orphan"}, 200, []any{"orphan"}},
		{"foreground", "?propagationPolicy=Foreground", nil, 200, []any{"foregroundDeletion"}},
		{"background", "?propagationPolicy=Background", nil, 200, nil},
		{"orphandeps-true", "", map[string]any{"orphanDependents": true}, 200, []any{"orphan"}},
		{"orphandeps-query", "?orphanDependents=true", nil, 200, []any{"orphan"}},
		{"orphandeps-false", "", map[string]any{"orphanDependents": false}, 200, nil},
		{"default", "", nil, 200, nil},
	}
	for _, c := range cases {
		e.must(201, "POST", cmPath, cm(c.name, nil, nil))
		got := e.must(c.code, "DELETE", cmPath+"/"+c.name+c.query, c.body)
		if c.fins == nil {
			if got["kind"] != "Status" {
				t.Errorf("%s: not deleted: %v", c.name, got)
			}
			e.expectStatus(404, "NotFound", "", "GET", cmPath+"/"+c.name, nil)
			continue
		}
		if fmt.Sprint(path(got, "metadata", "finalizers")) != fmt.Sprint(c.fins) || path(got, "metadata", "deletionTimestamp") == nil {
			t.Errorf("%s: %v", c.name, got["metadata"])
		}
	}
	// A later DELETE may change the propagation: Background drops the
	// orphan finalizer, which was the last, so the object goes.
	e.must(200, "DELETE", cmPath+"/orphan?propagationPolicy=Background", nil)
	e.expectStatus(404, "NotFound", "", "GET", cmPath+"/orphan", nil)
	// Foreground replaces orphan, keeping other finalizers in order.
	e.must(201, "POST", cmPath, withFinalizers(cm("mix", nil, nil), "a/b", "orphan"))
	got := e.must(200, "DELETE", cmPath+"/mix?propagationPolicy=Foreground", nil)
	if fmt.Sprint(path(got, "metadata", "finalizers")) != "[a/b foregroundDeletion]" {
		t.Fatalf("mix: %v", got["metadata"])
	}
	// orphanDependents=false on an object that stays: 202.
	e.must(201, "POST", cmPath, withFinalizers(cm("acc", nil, nil), "a/b"))
	e.must(202, "DELETE", cmPath+"/acc", map[string]any{"orphanDependents": false})
	// Both set: 422.
	e.must(201, "POST", cmPath, cm("both", nil, nil))
	e.expectStatus(422, "Invalid", `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set`,
		"DELETE", cmPath+"/both", map[string]any{"orphanDependents": true, "propagationPolicy": "Orphan"})
	// Events opt out of garbage collection: no finalizer, deleted.
	ev := map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "ev"},
		"involvedObject": map[string]any{"kind": "ConfigMap", "name": "x", "namespace": "default"}}
	e.must(201, "POST", "/api/v1/namespaces/default/events", ev)
	e.must(200, "DELETE", "/api/v1/namespaces/default/events/ev?propagationPolicy=Orphan", nil)
	e.expectStatus(404, "NotFound", "", "GET", "/api/v1/namespaces/default/events/ev", nil)
	// Custom resources take them too.
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	wbase := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", wbase, widget("wo", "v1"))
	got = e.must(200, "DELETE", wbase+"/wo?propagationPolicy=Foreground", nil)
	if fmt.Sprint(path(got, "metadata", "finalizers")) != "[foregroundDeletion]" {
		t.Fatalf("custom resource: %v", got["metadata"])
	}
}

func TestDeletePreconditionsAndDryRun(t *testing.T) {
	e := newEnv(t)
	created := e.must(201, "POST", cmPath, withFinalizers(cm("p", nil, nil), "a/b"))
	uid := path(created, "metadata", "uid").(string)
	rv := path(created, "metadata", "resourceVersion").(string)
	e.expectStatus(409, "Conflict", fmt.Sprintf(`Operation cannot be fulfilled on ConfigMap "p": the UID in the precondition (wrong) does not match the UID in record (%s). The object might have been deleted and then recreated`, uid),
		"DELETE", cmPath+"/p", map[string]any{"preconditions": map[string]any{"uid": "wrong"}})
	e.expectStatus(409, "Conflict", fmt.Sprintf(`Operation cannot be fulfilled on ConfigMap "p": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (%s). The object might have been modified`, rv),
		"DELETE", cmPath+"/p", map[string]any{"preconditions": map[string]any{"resourceVersion": "1"}})

	// Dry run: the answer shows the marking, nothing is written. (With a
	// body, kube reads the options from it alone: dryRun in the query
	// would be ignored.)
	w := e.watch(cmPath + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv)
	dry := e.must(200, "DELETE", cmPath+"/p", map[string]any{"propagationPolicy": "Orphan", "dryRun": []string{"All"}})
	if path(dry, "metadata", "deletionTimestamp") == nil || fmt.Sprint(path(dry, "metadata", "finalizers")) != "[a/b orphan]" {
		t.Fatalf("dry run answer: %v", dry)
	}
	got := e.must(200, "GET", cmPath+"/p", nil)
	if path(got, "metadata", "deletionTimestamp") != nil || path(got, "metadata", "resourceVersion") != rv {
		t.Fatalf("dry run wrote: %v", got)
	}
	// The preconditions that hold let the marking through.
	marked := e.must(200, "DELETE", cmPath+"/p", map[string]any{"preconditions": map[string]any{"uid": uid, "resourceVersion": rv}})
	if path(marked, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("marked: %v", marked)
	}
	// The first event after the dry run is the real marking.
	if ev := w.expect("MODIFIED", "p"); path(ev.Object, "metadata", "resourceVersion") != path(marked, "metadata", "resourceVersion") {
		t.Fatalf("event %v", ev.Object)
	}
	// Dry run of the update removing the last finalizer: nothing deleted.
	e.must(200, "PATCH", cmPath+"/p?dryRun=All", `{"metadata":{"finalizers":null}}`, "Content-Type", mergePatch)
	e.must(200, "GET", cmPath+"/p", nil)
	e.must(200, "PATCH", cmPath+"/p", `{"metadata":{"finalizers":null}}`, "Content-Type", mergePatch)
	w.expect("DELETED", "p")
}

func podObj(name, node string, extra map[string]any) map[string]any {
	spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}
	if node != "" {
		spec["nodeName"] = node
	}
	p := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name}, "spec": spec}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func TestPodGracefulDeletion(t *testing.T) {
	e := newEnv(t, fixedClock(testNow))
	at := func(s int) string { return testNow.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }

	// Unbound: marked with grace 0, then deleted; the answer is the pod.
	created := e.must(201, "POST", podPath, podObj("unbound", "", nil))
	w := e.watch(podPath + "?watch=1&resourceVersion=" + path(created, "metadata", "resourceVersion").(string))
	d := e.must(200, "DELETE", podPath+"/unbound", nil)
	if d["kind"] != "Pod" {
		t.Fatalf("pod DELETE answered %v", d)
	}
	w.expect("MODIFIED", "unbound")
	w.expect("DELETED", "unbound")

	// Bound: 30 s by default; it stays.
	e.must(201, "POST", podPath, podObj("bound", "n1", nil))
	d = e.must(200, "DELETE", podPath+"/bound", nil)
	if path(d, "metadata", "deletionTimestamp") != at(30) || path(d, "metadata", "deletionGracePeriodSeconds") != float64(30) {
		t.Fatalf("bound pod: %v", d["metadata"])
	}
	w.expect("ADDED", "bound")
	w.expect("MODIFIED", "bound")
	rv := path(d, "metadata", "resourceVersion")
	// Again, or with a longer period: unchanged.
	for _, q := range []string{"", "?gracePeriodSeconds=60", "?gracePeriodSeconds=30"} {
		again := e.must(200, "DELETE", podPath+"/bound"+q, nil)
		if path(again, "metadata", "resourceVersion") != rv {
			t.Fatalf("DELETE%s changed the pod: %v", q, again["metadata"])
		}
	}
	// Shorter: the timestamp moves back by the difference.
	d = e.must(200, "DELETE", podPath+"/bound?gracePeriodSeconds=10", nil)
	if path(d, "metadata", "deletionTimestamp") != at(10) || path(d, "metadata", "deletionGracePeriodSeconds") != float64(10) {
		t.Fatalf("shortened: %v", d["metadata"])
	}
	w.expect("MODIFIED", "bound")
	// Zero forces.
	e.must(200, "DELETE", podPath+"/bound", map[string]any{"gracePeriodSeconds": 0})
	w.expect("MODIFIED", "bound")
	w.expect("DELETED", "bound")
	e.expectStatus(404, "NotFound", "", "GET", podPath+"/bound", nil)

	// The pod's own period, and the request's over it.
	e.must(201, "POST", podPath, podObj("own", "n1", map[string]any{"spec": map[string]any{"nodeName": "n1", "terminationGracePeriodSeconds": 5, "containers": []any{map[string]any{"name": "c", "image": "i"}}}}))
	if d := e.must(200, "DELETE", podPath+"/own", nil); path(d, "metadata", "deletionGracePeriodSeconds") != float64(5) {
		t.Fatalf("own period: %v", d["metadata"])
	}
	e.must(201, "POST", podPath, podObj("req", "n1", nil))
	if d := e.must(200, "DELETE", podPath+"/req?gracePeriodSeconds=7", nil); path(d, "metadata", "deletionTimestamp") != at(7) {
		t.Fatalf("requested period: %v", d["metadata"])
	}

	// Finished pods go at once, bound or not.
	// (Status sent on create is reset to Pending, as kube's strategy does:
	// it is set through /status.)
	e.must(201, "POST", podPath, podObj("done", "n1", nil))
	e.must(200, "PATCH", podPath+"/done/status", `{"status":{"phase":"Succeeded"}}`, "Content-Type", mergePatch)
	e.must(200, "DELETE", podPath+"/done", nil)
	e.expectStatus(404, "NotFound", "", "GET", podPath+"/done", nil)

	// With a finalizer and grace left, removing the finalizer does not
	// delete (the kubelet would).
	e.must(201, "POST", podPath, withFinalizers(podObj("fin", "n1", nil), "a/b"))
	e.must(200, "DELETE", podPath+"/fin", nil)
	e.must(200, "PATCH", podPath+"/fin", `{"metadata":{"finalizers":null}}`, "Content-Type", mergePatch)
	e.must(200, "GET", podPath+"/fin", nil)
	// Forcing it then deletes it.
	e.must(200, "DELETE", podPath+"/fin?gracePeriodSeconds=0", nil)
	e.expectStatus(404, "NotFound", "", "GET", podPath+"/fin", nil)
}

// TestNamespaceOwnFinalizers: a namespace whose metadata.finalizers are
// set is marked Terminating on DELETE; once its content is gone and the
// namespace controller has finalized it (here: its /finalize write, as
// the controller makes it), it stays until its last metadata finalizer is
// removed, and no finalizer can be added meanwhile.
func TestNamespaceOwnFinalizers(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": "held", "finalizers": []any{"example.com/x"}}})
	d := e.must(200, "DELETE", "/api/v1/namespaces/held", nil)
	if d["kind"] != "Namespace" || path(d, "status", "phase") != "Terminating" || path(d, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("DELETE answered %v", d)
	}
	d["spec"] = map[string]any{"finalizers": []any{}}
	e.must(200, "PUT", "/api/v1/namespaces/held/finalize", d)
	e.must(200, "GET", "/api/v1/namespaces/held", nil)
	e.expectStatus(422, "Invalid", "", "PATCH", "/api/v1/namespaces/held", `{"metadata":{"finalizers":["example.com/x","example.com/y"]}}`, "Content-Type", mergePatch)
	e.must(200, "PATCH", "/api/v1/namespaces/held", `{"metadata":{"finalizers":null}}`, "Content-Type", mergePatch)
	e.expectStatus(404, "NotFound", "", "GET", "/api/v1/namespaces/held", nil)
}

// TestDefaultPropagationOfKinds: a DELETE without a propagation policy
// takes the kind's own default, its kube strategy's
// DefaultGarbageCollectionPolicy: a batch/v1 Job (as a core/v1
// ReplicationController) orphans its dependents, so the DELETE adds the
// orphan finalizer and answers the object, which stays for the garbage
// collector; a CronJob or a Deployment deletes them in the background
// and is gone at once.
func TestDefaultPropagationOfKinds(t *testing.T) {
	e := newEnv(t)
	tmpl := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
		"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}
	always := map[string]any{"metadata": tmpl["metadata"], "spec": map[string]any{"containers": tmpl["spec"].(map[string]any)["containers"]}}
	kinds := []struct {
		path, kind string
		spec       map[string]any
		orphan     bool
	}{
		{"/apis/batch/v1/namespaces/default/jobs", "Job", map[string]any{"suspend": true, "template": tmpl}, true},
		{"/api/v1/namespaces/default/replicationcontrollers", "ReplicationController", map[string]any{"replicas": 0, "selector": map[string]any{"app": "x"}, "template": always}, true},
		{"/apis/batch/v1/namespaces/default/cronjobs", "CronJob", map[string]any{"schedule": "* * * * *", "jobTemplate": map[string]any{"spec": map[string]any{"template": tmpl}}}, false},
		{"/apis/apps/v1/namespaces/default/deployments", "Deployment", map[string]any{"replicas": 0, "selector": map[string]any{"matchLabels": map[string]any{"app": "x"}}, "template": always}, false},
	}
	for _, k := range kinds {
		apiVersion := strings.TrimPrefix(strings.Split(k.path, "/namespaces/")[0], "/apis/")
		apiVersion = strings.TrimPrefix(apiVersion, "/api/")
		e.must(201, "POST", k.path, map[string]any{"apiVersion": apiVersion, "kind": k.kind, "metadata": map[string]any{"name": "d"}, "spec": k.spec})
		dry := e.must(200, "DELETE", k.path+"/d?dryRun=All", nil)
		got := e.must(200, "DELETE", k.path+"/d", nil)
		if !k.orphan {
			if got["kind"] != "Status" || dry["kind"] != "Status" {
				t.Errorf("%s: not deleted: %v", k.kind, got)
			}
			e.expectStatus(404, "NotFound", "", "GET", k.path+"/d", nil)
			continue
		}
		for what, m := range map[string]map[string]any{"dry run": dry, "delete": got, "get": e.must(200, "GET", k.path+"/d", nil)} {
			if m["kind"] != k.kind || fmt.Sprint(path(m, "metadata", "finalizers")) != "[orphan]" || path(m, "metadata", "deletionTimestamp") == nil {
				t.Errorf("%s %s: %v", k.kind, what, m["metadata"])
			}
		}
	}
}
