package server

import (
	"fmt"
	"testing"
)

// TestNamespaceDeletePreconditions: a DELETE of a namespace whose
// preconditions fail changes nothing (409, contents kept, still Active);
// one whose preconditions hold deletes it and its contents and answers the
// terminated namespace, as without preconditions.
func TestNamespaceDeletePreconditions(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": "pre"}})
	e.must(201, "POST", "/api/v1/namespaces/pre/configmaps", cm("c1", nil, nil))
	ns := e.must(200, "GET", "/api/v1/namespaces/pre", nil)
	rv, uid := path(ns, "metadata", "resourceVersion").(string), path(ns, "metadata", "uid").(string)

	unchanged := func(what string) {
		t.Helper()
		now := e.must(200, "GET", "/api/v1/namespaces/pre", nil)
		if path(now, "metadata", "resourceVersion") != rv || path(now, "status", "phase") != "Active" || path(now, "metadata", "deletionTimestamp") != nil {
			t.Fatalf("%s: namespace changed: %v", what, now)
		}
		e.must(200, "GET", "/api/v1/namespaces/pre/configmaps/c1", nil)
	}
	opts := func(pre map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": pre}
	}
	e.expectStatus(409, "Conflict",
		fmt.Sprintf(`Operation cannot be fulfilled on namespaces "pre": Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: %s`, rv),
		"DELETE", "/api/v1/namespaces/pre", opts(map[string]any{"resourceVersion": "1"}))
	unchanged("wrong resourceVersion")
	e.expectStatus(409, "Conflict",
		fmt.Sprintf(`Operation cannot be fulfilled on namespaces "pre": Precondition failed: UID in precondition: nope, UID in object meta: %s`, uid),
		"DELETE", "/api/v1/namespaces/pre", opts(map[string]any{"uid": "nope", "resourceVersion": rv}))
	unchanged("wrong uid")

	d := e.must(200, "DELETE", "/api/v1/namespaces/pre", opts(map[string]any{"uid": uid, "resourceVersion": rv}))
	if d["kind"] != "Namespace" || path(d, "status", "phase") != "Terminating" || path(d, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("delete with matching preconditions answered %v", d)
	}
	// Marked, not gone: the namespace controller (none here) empties it.
	if now := e.must(200, "GET", "/api/v1/namespaces/pre", nil); path(now, "status", "phase") != "Terminating" {
		t.Fatalf("after delete: %v", now)
	}
	// Preconditions hold on a second DELETE too.
	e.expectStatus(409, "Conflict", "", "DELETE", "/api/v1/namespaces/pre", opts(map[string]any{"uid": "nope"}))
	e.must(200, "PUT", "/api/v1/namespaces/pre/finalize", map[string]any{"metadata": map[string]any{"name": "pre"}, "spec": map[string]any{"finalizers": []any{}}})
	e.expectStatus(404, "NotFound", `namespaces "pre" not found`, "GET", "/api/v1/namespaces/pre", nil)
	// A namespace of that name made again is a new one: the old uid does
	// not delete it.
	e.must(201, "POST", "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": "pre"}})
	e.expectStatus(409, "Conflict", "", "DELETE", "/api/v1/namespaces/pre", opts(map[string]any{"uid": uid}))
	e.must(200, "DELETE", "/api/v1/namespaces/pre", opts(map[string]any{"resourceVersion": nil}))
}

// TestImmortalNamespaces: default, kube-system and kube-public cannot be
// deleted, dry run or not, one by one or by collection (kube-apiserver has
// no deletecollection on namespaces: its router's 405); kube-node-lease
// can.
func TestImmortalNamespaces(t *testing.T) {
	e := newEnv(t)
	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		e.must(201, "POST", "/api/v1/namespaces/"+ns+"/configmaps", cm("keep", nil, nil))
		rv := path(e.must(200, "GET", "/api/v1/namespaces/"+ns, nil), "metadata", "resourceVersion")
		for _, q := range []string{"", "?dryRun=All"} {
			st := e.expectStatus(403, "Forbidden", `namespaces "`+ns+`" is forbidden: this namespace may not be deleted`,
				"DELETE", "/api/v1/namespaces/"+ns+q, nil)
			if path(st, "details", "name") != ns || path(st, "details", "kind") != "namespaces" {
				t.Fatalf("details: %v", st)
			}
		}
		now := e.must(200, "GET", "/api/v1/namespaces/"+ns, nil)
		if path(now, "metadata", "resourceVersion") != rv || path(now, "status", "phase") != "Active" {
			t.Fatalf("%s changed: %v", ns, now)
		}
		e.must(200, "GET", "/api/v1/namespaces/"+ns+"/configmaps/keep", nil)
	}
	for _, q := range []string{"", "?labelSelector=x%21%3Dy", "?fieldSelector=metadata.name%3Ddefault"} {
		e.expectStatus(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
			"DELETE", "/api/v1/namespaces"+q, nil)
	}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		e.must(200, "GET", "/api/v1/namespaces/"+ns, nil)
	}
	e.must(200, "DELETE", "/api/v1/namespaces/kube-node-lease", nil)
}
