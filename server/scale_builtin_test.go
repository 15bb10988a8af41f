package server

import "testing"

// TestScaleBuiltinWorkloads: Deployments, ReplicaSets, StatefulSets and
// ReplicationControllers serve kube's autoscaling/v1 Scale: spec.replicas,
// status.replicas and spec.selector as a selector string; a write sets
// spec.replicas through the kind's own strategy (generation bumps).
func TestScaleBuiltinWorkloads(t *testing.T) {
	e := newEnv(t)
	tmpl := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
	}
	for _, tc := range []struct{ path, kind, apiVersion string }{
		{"/apis/apps/v1/namespaces/default/deployments", "Deployment", "apps/v1"},
		{"/apis/apps/v1/namespaces/default/replicasets", "ReplicaSet", "apps/v1"},
		{"/apis/apps/v1/namespaces/default/statefulsets", "StatefulSet", "apps/v1"},
		{"/api/v1/namespaces/default/replicationcontrollers", "ReplicationController", "v1"},
	} {
		selector := any(map[string]any{"matchLabels": map[string]any{"app": "web"}})
		if tc.kind == "ReplicationController" {
			selector = map[string]any{"app": "web"}
		}
		spec := map[string]any{"replicas": 2, "selector": selector, "template": tmpl}
		if tc.kind == "StatefulSet" {
			spec["serviceName"] = "web"
		}
		e.must(201, "POST", tc.path, map[string]any{"apiVersion": tc.apiVersion, "kind": tc.kind,
			"metadata": map[string]any{"name": "w"}, "spec": spec})
		s := e.must(200, "GET", tc.path+"/w/scale", nil)
		if s["kind"] != "Scale" || s["apiVersion"] != "autoscaling/v1" || path(s, "spec", "replicas") != float64(2) ||
			path(s, "status", "selector") != "app=web" {
			t.Fatalf("%s scale: %v", tc.kind, s)
		}
		s["spec"] = map[string]any{"replicas": 5}
		e.must(200, "PUT", tc.path+"/w/scale", s)
		got := e.must(200, "GET", tc.path+"/w", nil)
		if path(got, "spec", "replicas") != float64(5) || path(got, "metadata", "generation") != float64(2) {
			t.Fatalf("%s after scale: spec %v, generation %v", tc.kind, path(got, "spec", "replicas"), path(got, "metadata", "generation"))
		}
		e.must(200, "PATCH", tc.path+"/w/scale", `{"spec":{"replicas":1}}`, "Content-Type", "application/merge-patch+json")
		if got := e.must(200, "GET", tc.path+"/w", nil); path(got, "spec", "replicas") != float64(1) {
			t.Fatalf("%s after patch: %v", tc.kind, path(got, "spec", "replicas"))
		}
	}
}
