package controllers_test

import (
	"fmt"
	"testing"

	"github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/wire"
)

func ownedBy(owners ...u) map[string]any {
	var refs []any
	for _, o := range owners {
		refs = append(refs, map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(), "name": o.GetName(), "uid": o.GetUID()})
	}
	return map[string]any{"ownerReferences": refs}
}

func withMeta(o u, meta map[string]any) u {
	m := o.Object["metadata"].(map[string]any)
	for k, v := range meta {
		m[k] = v
	}
	return o
}

// TestGarbageCollector: background collection. Dependents (built-in and
// custom) of a deleted owner are deleted; one that names an owner that
// never existed too; one that keeps another owner only loses the
// reference to the gone one. The client goes through a faulty proxy.
func TestGarbageCollector(t *testing.T) {
	s, admin := bare(t)
	mustCreate(t, res(admin, crdGVR), widgetCRD())
	waitFor(t, res(admin, crdGVR), "widgets.example.com", func(o u) bool {
		v, _ := o.Nested("status", "acceptedNames", "kind")
		return v == "Widget"
	})
	mustCreate(t, res(admin, nsGVR), obj("v1", "Namespace", "gc", nil))
	cms := res(admin, cmGVR).Namespace("gc")
	owner := mustCreate(t, cms, obj("v1", "ConfigMap", "owner", nil))
	other := mustCreate(t, cms, obj("v1", "ConfigMap", "other", nil))
	ghost := obj("v1", "ConfigMap", "ghost", nil)
	withMeta(ghost, map[string]any{"uid": "00000000-0000-4000-8000-000000000000"})

	dep1 := mustCreate(t, res(admin, secGVR).Namespace("gc"), withMeta(obj("v1", "Secret", "dep-secret", nil), ownedBy(owner)))
	dep2 := mustCreate(t, res(admin, wGVR).Namespace("gc"), withMeta(obj("example.com/v1", "Widget", "dep-widget", nil), ownedBy(owner)))
	both := mustCreate(t, cms, withMeta(obj("v1", "ConfigMap", "both", nil), ownedBy(owner, other)))
	mustCreate(t, cms, obj("v1", "ConfigMap", "free", nil))

	runHost(t, faulty(t, s, 0.001, 40), controllers.Config{Controllers: []string{"garbagecollector"}})
	// A dangling reference from the start: collected.
	orphan := mustCreate(t, cms, withMeta(obj("v1", "ConfigMap", "dangling", nil), ownedBy(ghost)))
	waitGone(t, cms, orphan.GetName())

	if _, err := cms.Delete(t.Context(), "owner", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, res(admin, secGVR).Namespace("gc"), dep1.GetName())
	waitGone(t, res(admin, wGVR).Namespace("gc"), dep2.GetName())
	got := waitFor(t, cms, both.GetName(), func(o u) bool {
		refs, _ := o.Nested("metadata", "ownerReferences")
		return len(refs.([]any)) == 1
	})
	if refs, _ := got.Nested("metadata", "ownerReferences"); fmt.Sprint(refs.([]any)[0].(map[string]any)["uid"]) != other.GetUID() {
		t.Fatalf("kept references: %v", refs)
	}
	for _, name := range []string{"other", "free", "both"} {
		if _, err := cms.Get(t.Context(), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
