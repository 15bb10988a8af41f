package server

import (
	"strings"
	"testing"
)

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

		// Refused as kube's scale REST refuses: a PUT's uid is a storage
		// precondition (first); the Scale's validation (kind Scale), then
		// a patched Scale's uid.
		group, plural, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(tc.path, "/apis/"), "/api/"), "/namespaces/default/")
		if i := strings.LastIndex(group, "/"); i >= 0 {
			group = group[:i]
		} else {
			group = ""
		}
		qualified := plural + "/scale"
		keyPrefix := plural
		if plural == "replicationcontrollers" {
			keyPrefix = "controllers" // kube's etcd prefix for them
		}
		if group != "" {
			qualified += "." + group
		}
		other := map[string]any{"metadata": map[string]any{"name": "w", "uid": "00000000-0000-0000-0000-000000000000"}, "spec": map[string]any{"replicas": 3}}
		const unnamed = "the name of the object (w based on URL) was undeterminable: name must be provided"
		for _, c := range []struct {
			method, ctype string
			body          any
			code          int
			message       string
		}{
			{"PUT", "", map[string]any{"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"replicas": -1}}, 422,
				`Scale.autoscaling "w" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
			{"PATCH", "application/merge-patch+json", `{"spec":{"replicas":-1}}`, 422,
				`Scale.autoscaling "w" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
			{"PUT", "", other, 409,
				`Operation cannot be fulfilled on ` + strings.TrimSuffix(plural+"."+group, ".") + ` "w": StorageError: invalid object, Code: 4, Key: /registry/` + keyPrefix + `/default/w, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: ` + path(got, "metadata", "uid").(string)},
			{"PATCH", "application/merge-patch+json", `{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"}}`, 409,
				`Operation cannot be fulfilled on ` + qualified + ` "w": Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: ` + path(got, "metadata", "uid").(string)},
			{"PATCH", "application/merge-patch+json", `{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"},"spec":{"replicas":-1}}`, 422,
				`Scale.autoscaling "w" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
			// The resourceVersion is read after the Scale's checks.
			{"PATCH", "application/merge-patch+json", `{"metadata":{"resourceVersion":"1"},"spec":{"replicas":-1}}`, 422,
				`Scale.autoscaling "w" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
			{"PUT", "", map[string]any{"metadata": map[string]any{"name": "w", "resourceVersion": "x1"}, "spec": map[string]any{"replicas": -1}}, 422,
				`Scale.autoscaling "w" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
			{"PUT", "", map[string]any{"metadata": map[string]any{"name": "w", "resourceVersion": "x1"}, "spec": map[string]any{"replicas": 3}}, 500,
				`strconv.ParseUint: parsing "x1": invalid syntax`},
			// A Scale without a name is refused, as any object written
			// without one: the URL's does not stand in for it.
			{"PUT", "", `{"spec":{"replicas":3}}`, 400, unnamed},
			{"PUT", "", `{}`, 400, unnamed},
			{"PATCH", "application/merge-patch+json", `{"metadata":{"name":null},"spec":{"replicas":3}}`, 400, unnamed},
		} {
			var hdr []string
			if c.ctype != "" {
				hdr = []string{"Content-Type", c.ctype}
			}
			r := e.do(c.method, tc.path+"/w/scale", c.body, hdr...)
			if st := r.json(t); r.code != c.code || st["message"] != c.message {
				t.Errorf("%s %s scale: %d %v, want %d %q", tc.kind, c.method, r.code, st["message"], c.code, c.message)
			}
		}
		// An applied Scale's namespace is checked before its name, as
		// kube's patcher checks them.
		e.expectStatus(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request",
			"PATCH", tc.path+"/w/scale?fieldManager=s&force=true", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"other","namespace":"elsewhere"},"spec":{"replicas":7}}`,
			"Content-Type", "application/apply-patch+yaml")
		if got := e.must(200, "GET", tc.path+"/w", nil); path(got, "spec", "replicas") != float64(1) {
			t.Fatalf("%s after refused scales: %v", tc.kind, path(got, "spec", "replicas"))
		}
	}
}
