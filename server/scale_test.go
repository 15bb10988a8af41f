package server

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

func scaleCRD() map[string]any {
	return subresourcedCRD(map[string]any{
		"status": map[string]any{},
		"scale": map[string]any{
			"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
			"labelSelectorPath": ".status.selector",
		},
	})
}

func TestScaleSubresourceDiscovery(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, scaleCRD())
	list := e.must(200, "GET", "/apis/example.com/v1", nil)
	var found map[string]any
	for _, r := range list["resources"].([]any) {
		if r.(map[string]any)["name"] == "widgets/scale" {
			found = r.(map[string]any)
		}
	}
	if found == nil || found["group"] != "autoscaling" || found["version"] != "v1" || found["kind"] != "Scale" ||
		!found["namespaced"].(bool) || len(found["verbs"].([]any)) != 3 {
		t.Fatalf("widgets/scale in discovery: %v", list["resources"])
	}
	if names := discoveryNames(t, e, "/apis/example.com/v1"); !slices.Equal(names, []string{"widgets", "widgets/status", "widgets/scale"}) {
		t.Fatalf("discovery order: %v", names)
	}
}

func TestScaleSubresource(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, scaleCRD())
	base := "/apis/example.com/v1/namespaces/default/widgets"
	w := widget("w", "v1")
	w["spec"].(map[string]any)["replicas"] = 1
	created := e.must(201, "POST", base, w)
	e.must(200, "PATCH", base+"/w/status", `{"status":{"replicas":1,"selector":"app=w"}}`, "Content-Type", "application/merge-patch+json")

	s := e.must(200, "GET", base+"/w/scale", nil)
	if s["apiVersion"] != "autoscaling/v1" || s["kind"] != "Scale" || path(s, "metadata", "name") != "w" ||
		path(s, "metadata", "namespace") != "default" || path(s, "metadata", "uid") != path(created, "metadata", "uid") ||
		path(s, "spec", "replicas") != float64(1) || path(s, "status", "replicas") != float64(1) ||
		path(s, "status", "selector") != "app=w" || path(s, "metadata", "resourceVersion") == nil {
		t.Fatalf("scale: %v", s)
	}

	// PUT writes specReplicasPath; the object's update rules apply.
	s["spec"] = map[string]any{"replicas": 3}
	s["status"] = map[string]any{"replicas": 7}
	got := e.must(200, "PUT", base+"/w/scale", s)
	if path(got, "spec", "replicas") != float64(3) || path(got, "status", "replicas") != float64(1) {
		t.Fatalf("scale update: %v", got)
	}
	obj := e.must(200, "GET", base+"/w", nil)
	if path(obj, "spec", "replicas") != float64(3) || path(obj, "spec", "color") != "red" ||
		path(obj, "status", "replicas") != float64(1) || generationOf(t, obj) != 2 {
		t.Fatalf("object after scale: %v", obj)
	}
	// A stale resourceVersion is a conflict.
	e.expectStatus(409, "Conflict", `Operation cannot be fulfilled on widgets.example.com "w": the object has been modified; please apply your changes to the latest version and try again`,
		"PUT", base+"/w/scale", s)

	// Without a resourceVersion the Scale is the object's own (kube's
	// scale REST copies one only when set), though a custom resource
	// refuses unconditional updates; "0" is one, and refused.
	e.must(200, "PUT", base+"/w/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w"},"spec":{"replicas":3}}`) // a no-op: the generation stays
	e.expectStatus(422, "Invalid", `widgets.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`,
		"PUT", base+"/w/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w","resourceVersion":"0"},"spec":{"replicas":4}}`)
	e.must(200, "PATCH", base+"/w/scale", `{"metadata":{"resourceVersion":null},"spec":{"replicas":3}}`, "Content-Type", "application/merge-patch+json")

	got = e.must(200, "PATCH", base+"/w/scale", `{"spec":{"replicas":5}}`, "Content-Type", "application/merge-patch+json")
	if path(got, "spec", "replicas") != float64(5) {
		t.Fatalf("merge patch: %v", got)
	}
	got = e.must(200, "PATCH", base+"/w/scale", `[{"op":"replace","path":"/spec/replicas","value":0}]`, "Content-Type", "application/json-patch+json")
	if path(got, "spec", "replicas") != nil {
		t.Fatalf("json patch to 0: %v", got)
	}
	if obj := e.must(200, "GET", base+"/w", nil); path(obj, "spec", "replicas") != float64(0) || generationOf(t, obj) != 4 {
		t.Fatalf("object after patches: %v", obj)
	}
	e.expectStatus(415, "UnsupportedMediaType", "", "PATCH", base+"/w/scale", `{"spec":{"replicas":1}}`, "Content-Type", "application/strategic-merge-patch+json")

	// Invalid values: kube's custom resource validation.
	e.expectStatus(422, "Invalid", `Widget.example.com "w" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer`,
		"PATCH", base+"/w/scale", `{"spec":{"replicas":-1}}`, "Content-Type", "application/merge-patch+json")
	e.expectStatus(422, "Invalid", `Widget.example.com "w" is invalid: .spec.replicas: Invalid value: 3000000000: should be less than or equal to 2147483647`,
		"PATCH", base+"/w", `{"spec":{"replicas":3000000000}}`, "Content-Type", "application/merge-patch+json")
	e.expectStatus(422, "Invalid", `Widget.example.com "w" is invalid: .status.replicas: Invalid value: -2: should be a non-negative integer`,
		"PATCH", base+"/w/status", `{"status":{"replicas":-2}}`, "Content-Type", "application/merge-patch+json")
	e.expectStatus(422, "Invalid", `Widget.example.com "w" is invalid: .status.selector: Invalid value: "": .status.selector accessor error: 3.5 is of the type float64, expected string`,
		"PATCH", base+"/w/status", `{"status":{"selector":3.5}}`, "Content-Type", "application/merge-patch+json")
	bad := widget("bad", "v1")
	bad["spec"].(map[string]any)["replicas"] = "two"
	e.expectStatus(422, "Invalid", `Widget.example.com "bad" is invalid: .spec.replicas: Invalid value: 0: .spec.replicas accessor error: two is of the type string, expected int64`,
		"POST", base, bad)

	// The Scale must be this object's, and name itself: the URL's name
	// does not stand in for a missing one.
	e.expectStatus(400, "BadRequest", "the name of the object (other) does not match the name on the URL (w)",
		"PUT", base+"/w/scale", map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "other"}, "spec": map[string]any{"replicas": 1}})
	e.expectStatus(400, "BadRequest", "the name of the object (w based on URL) was undeterminable: name must be provided",
		"PUT", base+"/w/scale", `{"spec":{"replicas":1}}`)
	e.expectStatus(400, "BadRequest", "", "PUT", base+"/w/scale", map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}})

	// Without replicas at specReplicasPath: GET is kube's 500, a patch that
	// does not set them a 400, one that does sets them.
	e.must(201, "POST", base, widget("empty", "v1"))
	e.expectStatus(500, "InternalError", `Internal error occurred: the spec replicas field ".spec.replicas" does not exist`, "GET", base+"/empty/scale", nil)
	e.expectStatus(400, "BadRequest", `the spec replicas field ".spec.replicas" cannot be empty`,
		"PATCH", base+"/empty/scale", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", "application/merge-patch+json")
	got = e.must(200, "PATCH", base+"/empty/scale", `{"spec":{"replicas":2}}`, "Content-Type", "application/merge-patch+json")
	if path(got, "spec", "replicas") != float64(2) {
		t.Fatalf("patch sets replicas: %v", got)
	}

	e.expectStatus(404, "NotFound", `widgets.example.com "nope" not found`, "GET", base+"/nope/scale", nil)
	e.expectStatus(405, "MethodNotAllowed", "", "DELETE", base+"/w/scale", nil)
}

// A CRD without the scale subresource serves no /scale.
func TestScaleSubresourceNotDeclared(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	base := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", base, widget("w", "v1"))
	e.expectStatus(404, "NotFound", `widgets.example.com "w" not found`, "GET", base+"/w/scale", nil)
	if names := discoveryNames(t, e, "/apis/example.com/v1"); slices.Contains(names, "widgets/scale") {
		t.Fatalf("discovery: %v", names)
	}
}

// The CRD's scale paths are checked as kube checks them.
func TestScaleSubresourceCRDValidation(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		scale map[string]any
		msg   string
	}{
		{map[string]any{"specReplicasPath": ".foo.replicas", "statusReplicasPath": ".status.replicas"},
			`spec.subresources.scale.specReplicasPath: Invalid value: ".foo.replicas": should be a json path under .spec`},
		{map[string]any{"specReplicasPath": "spec.replicas", "statusReplicasPath": ".status.replicas"},
			`spec.subresources.scale.specReplicasPath: Invalid value: "spec.replicas": must be a simple json path starting with .`},
		{map[string]any{"specReplicasPath": ".spec.replicas"},
			`spec.subresources.scale.statusReplicasPath: Required value`},
		{map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".metadata.labels"},
			`spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.labels": should be a json path under either .spec or .status`},
	} {
		crd := subresourcedCRD(map[string]any{"scale": tc.scale})
		e.expectStatus(422, "Invalid", `CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: `+tc.msg,
			"POST", crdPath, crd)
	}
	// Different subresources per version are checked per version.
	crd := widgetCRD("Namespaced", "v1", "v2")
	crd["spec"].(map[string]any)["versions"].([]any)[1].(map[string]any)["subresources"] = map[string]any{
		"scale": map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".spec.replicas"}}
	e.expectStatus(422, "Invalid", `CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: spec.versions[1].subresources.scale.statusReplicasPath: Invalid value: ".spec.replicas": should be a json path under .status`,
		"POST", crdPath, crd)
}

// FuzzScale: any Scale body, custom resource and scale paths go through
// decoding, the Scale of the object, the strategy and the scale
// validation without a panic, and every refusal is a Status.
func FuzzScale(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w","resourceVersion":"3"},"spec":{"replicas":2}}`),
		[]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":1},"spec":{"replicas":1},"status":{"replicas":1,"selector":"a=b"}}`),
		".spec.replicas", ".status.replicas", ".status.selector")
	f.Add([]byte(`{"kind":"Widget","spec":{"replicas":"x"}}`), []byte(`{"spec":{"replicas":{"a":1}},"status":[1]}`), ".spec", ".status.a.b", "")
	f.Add([]byte(`{"metadata":{"name":"x","namespace":"other"},"spec":null}`), []byte(`{"spec":{"replicas":1e300}}`), ".", "..", ".spec..x")
	f.Fuzz(func(t *testing.T, body, cr []byte, specPath, statusPath, selectorPath string) {
		sc := &crScale{SpecReplicasPath: specPath, StatusReplicasPath: statusPath}
		if selectorPath != "" {
			sc.LabelSelectorPath = &selectorPath
		}
		_ = validateCRDSubresources(&doc{rest: map[string]json.RawMessage{"spec": mustJSON(t, map[string]any{
			"versions": []any{map[string]any{"name": "v1", "subresources": map[string]any{"scale": sc}}},
		})}})
		res := &resource{group: "example.com", version: "v1", plural: "widgets", kind: "Widget", namespaced: true,
			crd: "widgets.example.com", hasStatus: true, scale: sc}
		res.strategy = newCRStrategy(res.group, res.version, res.kind, true, true, sc)
		c := &call{res: res, ns: "default", name: "w", w: httptest.NewRecorder(),
			r: httptest.NewRequest("PUT", "/apis/example.com/v1/namespaces/default/widgets/w/scale", nil)}
		isStatus := func(err error) {
			var st *wire.Status
			if err != nil && !errors.As(err, &st) {
				t.Fatalf("not a Status: %T %v", err, err)
			}
		}
		for _, patched := range []bool{false, true} {
			_, err := c.decodeScale(body, patched, nil)
			isStatus(err)
		}
		d, err := decodeDoc(cr)
		if err != nil {
			return
		}
		_, _, _ = scaleOf(d, 1, sc)
		isStatus(c.validateCustom(d))
		next := &doc{apiVersion: d.apiVersion, kind: d.kind, meta: cloneRaw(d.meta), rest: cloneRaw(d.rest)}
		isStatus(c.prepareCustomUpdate(next, d))
		isStatus(c.prepareCustomCreate(d))
	})
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
