package server

import (
	"fmt"
	"reflect"
	"testing"
)

func TestNamespaces(t *testing.T) {
	e := newEnv(t)
	l := e.must(200, "GET", "/api/v1/namespaces", nil)
	names := map[string]bool{}
	for _, it := range l["items"].([]any) {
		names[path(it.(map[string]any), "metadata", "name").(string)] = true
	}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if !names[ns] {
			t.Errorf("namespace %s not bootstrapped: %v", ns, names)
		}
	}
	ns := e.must(201, "POST", "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team"}})
	if path(ns, "status", "phase") != "Active" || path(ns, "metadata", "namespace") != nil {
		t.Fatalf("namespace: %v", ns)
	}
	// kube's strategy labels every namespace with its name, on every write.
	if path(ns, "metadata", "labels", "kubernetes.io/metadata.name") != "team" {
		t.Fatalf("name label: %v", ns)
	}
	ns = e.must(200, "PUT", "/api/v1/namespaces/team", map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "team", "labels": map[string]any{"a": "b"}}})
	if path(ns, "metadata", "labels", "kubernetes.io/metadata.name") != "team" || path(ns, "metadata", "labels", "a") != "b" {
		t.Fatalf("name label after an update: %v", ns)
	}
	if d := e.must(200, "GET", "/api/v1/namespaces/default", nil); path(d, "metadata", "labels", "kubernetes.io/metadata.name") != "default" {
		t.Fatalf("bootstrapped namespace: %v", d)
	}
	e.expectStatus(422, "Invalid", "", "POST", "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": "a.b"}})
	e.expectStatus(404, "NotFound", `namespaces "ghost" not found`, "POST", "/api/v1/namespaces/ghost/configmaps", cm("x", nil, nil))
	e.expectStatus(405, "MethodNotAllowed", "", "DELETE", "/api/v1/namespaces", nil)

	// Cascade: everything in the namespace goes, other namespaces keep theirs.
	e.must(201, "POST", "/api/v1/namespaces/team/configmaps", cm("c1", nil, nil))
	e.must(201, "POST", "/api/v1/namespaces/team/secrets", map[string]any{"metadata": map[string]any{"name": "s1"}, "type": "Opaque"})
	e.must(201, "POST", "/apis/coordination.k8s.io/v1/namespaces/team/leases", map[string]any{"metadata": map[string]any{"name": "l1"}})
	e.must(201, "POST", cmPath, cm("keep", nil, nil))
	crd := widgetCRD("Namespaced", "v1")
	e.must(201, "POST", crdPath, crd)
	e.must(201, "POST", "/apis/example.com/v1/namespaces/team/widgets", widget("w1", "v1"))

	d := e.must(200, "DELETE", "/api/v1/namespaces/team", nil)
	if d["kind"] != "Namespace" || path(d, "status", "phase") != "Terminating" || path(d, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("delete namespace answered %v", d)
	}
	// Without the namespace controller (this server runs none) the
	// namespace stays Terminating with its content, as on envtest.
	got := e.must(200, "GET", "/api/v1/namespaces/team", nil)
	if path(got, "status", "phase") != "Terminating" || fmt.Sprint(path(got, "spec", "finalizers")) != "[kubernetes]" {
		t.Fatalf("terminating namespace: %v", got)
	}
	for _, p := range []string{"/api/v1/namespaces/team/configmaps", "/apis/example.com/v1/namespaces/team/widgets"} {
		if items := e.must(200, "GET", p, nil)["items"].([]any); len(items) != 1 {
			t.Errorf("%s: the server itself deleted content: %v", p, items)
		}
	}
	// kube's NamespaceLifecycle names the object before a name is drawn
	// from generateName, and adds the cause controllers look for
	// (apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause)).
	withGenerateName := cm("", nil, nil)
	withGenerateName["metadata"] = map[string]any{"generateName": "g-"}
	for _, c := range []struct {
		path, name, resource, group string
		body                        any
	}{
		{"/api/v1/namespaces/team/configmaps", "c2", "configmaps", "", cm("c2", nil, nil)},
		{"/api/v1/namespaces/team/configmaps?dryRun=All", "c2", "configmaps", "", cm("c2", nil, nil)},
		{"/api/v1/namespaces/team/configmaps", "g-", "configmaps", "", withGenerateName},
		{"/apis/example.com/v1/namespaces/team/widgets", "w2", "widgets", "example.com", widget("w2", "v1")},
		// Before validation, as kube's admission: a name the strategy
		// refuses, or none, is still refused for the namespace.
		{"/api/v1/namespaces/team/configmaps", "UPPER", "configmaps", "", cm("UPPER", nil, nil)},
		{"/api/v1/namespaces/team/configmaps", "Unknown", "configmaps", "", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{}}},
		{"/apis/example.com/v1/namespaces/team/widgets", "Bad_Name", "widgets", "example.com", widget("Bad_Name", "v1")},
	} {
		gr := c.resource
		if c.group != "" {
			gr += "." + c.group
		}
		st := e.expectStatus(403, "Forbidden", gr+` "`+c.name+`" is forbidden: unable to create new content in namespace team because it is being terminated`,
			"POST", c.path, c.body)
		want := map[string]any{"name": c.name, "kind": c.resource, "causes": []any{map[string]any{
			"reason": "NamespaceTerminating", "message": "namespace team is being terminated", "field": "metadata.namespace"}}}
		if c.group != "" {
			want["group"] = c.group
		}
		if !reflect.DeepEqual(st["details"], want) {
			t.Errorf("POST %s: details %v, want %v", c.path, st["details"], want)
		}
	}
	// A second DELETE answers it as it is.
	if d := e.must(200, "DELETE", "/api/v1/namespaces/team", nil); path(d, "status", "phase") != "Terminating" {
		t.Fatalf("second delete answered %v", d)
	}
	e.must(200, "GET", cmPath+"/keep", nil)
}
