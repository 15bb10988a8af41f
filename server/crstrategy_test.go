package server

import (
	"strings"
	"testing"
)

// subresourcedCRD is widgetCRD (one version, v1) with the given
// subresources.
func subresourcedCRD(subresources map[string]any) map[string]any {
	crd := widgetCRD("Namespaced", "v1")
	v := crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	v["subresources"] = subresources
	return crd
}

func generationOf(t *testing.T, m map[string]any) float64 {
	t.Helper()
	g, ok := path(m, "metadata", "generation").(float64)
	if !ok {
		t.Fatalf("no generation: %v", m)
	}
	return g
}

// Without the status subresource, status is an ordinary field: kept on
// create, and any change but metadata bumps generation, status included,
// compared as kube compares (an integer and a float differ).
func TestCustomResourceGenerationWithoutStatusSubresource(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	base := "/apis/example.com/v1/namespaces/default/widgets"
	w := widget("w", "v1")
	w["status"] = map[string]any{"phase": "New"}
	got := e.must(201, "POST", base, w)
	if generationOf(t, got) != 1 || path(got, "status", "phase") != "New" {
		t.Fatalf("create: %v", got)
	}
	merge := func(p string) map[string]any {
		return e.must(200, "PATCH", base+"/w", p, "Content-Type", "application/merge-patch+json")
	}
	if g := generationOf(t, merge(`{"metadata":{"labels":{"a":"b"}}}`)); g != 1 {
		t.Fatalf("metadata change bumped generation to %v", g)
	}
	if g := generationOf(t, merge(`{"status":{"phase":"Ready"}}`)); g != 2 {
		t.Fatalf("status change without status subresource: generation %v, want 2", g)
	}
	if g := generationOf(t, merge(`{"spec":{"size":1}}`)); g != 3 {
		t.Fatalf("spec change: generation %v, want 3", g)
	}
	cur := e.must(200, "GET", base+"/w", nil)
	rv := path(cur, "metadata", "resourceVersion").(string)
	body := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"` + rv +
		`","labels":{"a":"b"}},"spec":{"color":"red","size":1.0},"status":{"phase":"Ready"}}`
	if g := generationOf(t, e.must(200, "PUT", base+"/w", body)); g != 4 {
		t.Fatalf("1 -> 1.0: generation %v, want 4 (kube's Semantic.DeepEqual tells int64 from float64)", g)
	}
}

// With the status subresource: status sent on create is dropped; writes
// to the main resource keep the stored status and bump generation only
// for changes outside metadata; writes to /status change only status
// and never generation.
func TestCustomResourceStatusSubresource(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, subresourcedCRD(map[string]any{"status": map[string]any{}}))
	base := "/apis/example.com/v1/namespaces/default/widgets"
	w := widget("w", "v1")
	w["status"] = map[string]any{"phase": "New"}
	got := e.must(201, "POST", base, w)
	if _, has := got["status"]; has || generationOf(t, got) != 1 {
		t.Fatalf("create kept status or generation wrong: %v", got)
	}
	stored := e.must(200, "GET", base+"/w", nil)
	if _, has := stored["status"]; has {
		t.Fatalf("status stored on create: %v", stored)
	}

	// /status: only status changes; labels sent with it are ignored.
	st := e.must(200, "GET", base+"/w/status", nil)
	st["status"] = map[string]any{"phase": "Ready"}
	st["spec"] = map[string]any{"color": "green"}
	st["metadata"].(map[string]any)["labels"] = map[string]any{"x": "y"}
	got = e.must(200, "PUT", base+"/w/status", st)
	if path(got, "status", "phase") != "Ready" || path(got, "spec", "color") != "red" ||
		path(got, "metadata", "labels") != nil || generationOf(t, got) != 1 {
		t.Fatalf("status write: %v", got)
	}
	got = e.must(200, "PATCH", base+"/w/status", `{"status":{"phase":"Done"},"spec":{"color":"blue"}}`, "Content-Type", "application/merge-patch+json")
	if path(got, "status", "phase") != "Done" || path(got, "spec", "color") != "red" || generationOf(t, got) != 1 {
		t.Fatalf("status patch: %v", got)
	}

	// Main resource: status as stored, generation for spec changes only.
	got = e.must(200, "PATCH", base+"/w", `{"status":{"phase":"Hacked"}}`, "Content-Type", "application/merge-patch+json")
	if path(got, "status", "phase") != "Done" || generationOf(t, got) != 1 {
		t.Fatalf("main write changed status or generation: %v", got)
	}
	got = e.must(200, "PATCH", base+"/w", `{"metadata":{"annotations":{"a":"b"}},"status":null}`, "Content-Type", "application/merge-patch+json")
	if path(got, "status", "phase") != "Done" || generationOf(t, got) != 1 {
		t.Fatalf("metadata write: %v", got)
	}
	got = e.must(200, "PATCH", base+"/w", `{"spec":{"color":"blue"},"status":{"phase":"Hacked"}}`, "Content-Type", "application/merge-patch+json")
	if path(got, "status", "phase") != "Done" || generationOf(t, got) != 2 {
		t.Fatalf("spec write: %v", got)
	}
	got["spec"] = map[string]any{"color": "blue", "size": 2}
	got = e.must(200, "PUT", base+"/w", got)
	if generationOf(t, got) != 3 || path(got, "status", "phase") != "Done" {
		t.Fatalf("spec update: %v", got)
	}
}

// A write through another served version compares the object as that
// version sees it: relabelling is not a change.
func TestCustomResourceGenerationAcrossVersions(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1", "v1beta1"))
	e.must(201, "POST", "/apis/example.com/v1/namespaces/default/widgets", widget("w", "v1"))
	got := e.must(200, "PATCH", "/apis/example.com/v1beta1/namespaces/default/widgets/w", `{"metadata":{"labels":{"a":"b"}}}`,
		"Content-Type", "application/merge-patch+json")
	if generationOf(t, got) != 1 {
		t.Fatalf("metadata write through v1beta1 bumped generation: %v", got)
	}
	got = e.must(200, "PATCH", "/apis/example.com/v1beta1/namespaces/default/widgets/w", `{"spec":{"color":"blue"}}`,
		"Content-Type", "application/merge-patch+json")
	if generationOf(t, got) != 2 {
		t.Fatalf("spec write through v1beta1: %v", got)
	}
}

// The scale subresource of another served version writes the object as
// that version sees it.
func TestScaleSubresourceAcrossVersions(t *testing.T) {
	e := newEnv(t)
	crd := widgetCRD("Namespaced", "v1", "v1beta1")
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		v.(map[string]any)["subresources"] = map[string]any{"scale": map[string]any{
			"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}
	}
	e.must(201, "POST", crdPath, crd)
	w := widget("w", "v1")
	w["spec"].(map[string]any)["replicas"] = 1
	e.must(201, "POST", "/apis/example.com/v1/namespaces/default/widgets", w)
	got := e.must(200, "PATCH", "/apis/example.com/v1beta1/namespaces/default/widgets/w/scale", `{"spec":{"replicas":4}}`,
		"Content-Type", "application/merge-patch+json")
	if path(got, "spec", "replicas") != float64(4) {
		t.Fatalf("scale through v1beta1: %v", got)
	}
	obj := e.must(200, "GET", "/apis/example.com/v1/namespaces/default/widgets/w", nil)
	if path(obj, "spec", "replicas") != float64(4) || generationOf(t, obj) != 2 {
		t.Fatalf("object: %v", obj)
	}
}

// A patch that changes a custom resource's uid is refused by kube's
// BeforeUpdate validation, which checks the metadata twice (the rules
// common to every kind, then the strategy's): the same cause twice, among
// the object's other faults, in kube's order.
func TestCustomResourceUIDImmutableCauses(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	base := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", base, widget("w", "v1"))
	causes := func(patch string) string {
		t.Helper()
		st := e.must(422, "PATCH", base+"/w", patch, "Content-Type", "application/merge-patch+json")
		var out []string
		for _, c := range path(st, "details", "causes").([]any) {
			c := c.(map[string]any)
			out = append(out, c["field"].(string)+": "+c["message"].(string))
		}
		return strings.Join(out, "; ")
	}
	const uid = `metadata.uid: Invalid value: "x": field is immutable`
	for _, tc := range []struct{ patch, want string }{
		{`{"metadata":{"uid":"x"}}`, uid + "; " + uid},
		{`{"metadata":{"uid":"x"},"kind":"Other"}`, uid + `; kind: Invalid value: "Other": must be Widget`},
	} {
		if got := causes(tc.patch); got != tc.want {
			t.Errorf("%s: causes %s, want %s", tc.patch, got, tc.want)
		}
	}
	// The uid a write leaves out is the stored one.
	got := e.must(200, "PATCH", base+"/w", `{"metadata":{"uid":null}}`, "Content-Type", "application/merge-patch+json")
	if uid, _ := path(got, "metadata", "uid").(string); uid == "" {
		t.Errorf("uid dropped: %v", got)
	}
}
