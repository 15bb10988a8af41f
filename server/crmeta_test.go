package server

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// kube-apiserver decodes a custom resource's metadata through ObjectMeta
// (apiextensions' objectmeta coercer): what ObjectMeta's encoding omits
// never shows, whichever way the object was written or is read.

// customMeta is a widget's metadata without the fields the server
// chooses, to compare.
func customMeta(m map[string]any) map[string]any {
	md, _ := m["metadata"].(map[string]any)
	out := maps.Clone(md)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace", "name"} {
		delete(out, k)
	}
	return out
}

func TestCustomResourceEmptyMetadata(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	base := "/apis/example.com/v1/namespaces/default/widgets"
	rv := path(e.must(200, "GET", base, nil), "metadata", "resourceVersion").(string)
	w := e.watch(base + "?watch=1&resourceVersion=" + rv)
	withMeta := func(name string, md map[string]any) map[string]any {
		o := widget(name, "v1")
		md["name"] = name
		o["metadata"] = md
		return o
	}
	empties := func() map[string]any {
		return map[string]any{"labels": map[string]any{}, "annotations": map[string]any{},
			"finalizers": []any{}, "ownerReferences": []any{}}
	}
	const ownerUID = "00000000-0000-0000-0000-000000000001"
	nullOwner := []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": ownerUID,
		"controller": nil, "blockOwnerDeletion": nil}}
	strippedOwner := []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": ownerUID}}
	expect := func(what string, got map[string]any, want map[string]any) {
		t.Helper()
		if g := customMeta(got); !equalJSON(g, want) {
			t.Errorf("%s: metadata %v, want %v", what, g, want)
		}
	}
	none := map[string]any{}

	expect("create with empties", e.must(201, "POST", base, withMeta("a", empties())), none)
	expect("get", e.must(200, "GET", base+"/a", nil), none)
	expect("watch create with empties", w.expect("ADDED", "a").Object, none)
	expect("dry-run create", e.must(201, "POST", base+"?dryRun=All", withMeta("d", empties())), none)
	nulls := map[string]any{"labels": nil, "annotations": nil, "finalizers": nil, "ownerReferences": nil,
		"generateName": "", "uid": "", "selfLink": "", "generation": 0, "deletionGracePeriodSeconds": nil, "managedFields": nil}
	expect("create with nulls", e.must(201, "POST", base, withMeta("n", nulls)), none)
	expect("null values", e.must(201, "POST", base, withMeta("v", map[string]any{
		"labels": map[string]any{"x": nil}, "annotations": map[string]any{"y": nil}, "ownerReferences": nullOwner})),
		map[string]any{"labels": map[string]any{"x": ""}, "annotations": map[string]any{"y": ""}, "ownerReferences": strippedOwner})

	upd := empties()
	upd["resourceVersion"] = path(e.must(200, "GET", base+"/a", nil), "metadata", "resourceVersion")
	expect("update with empties", e.must(200, "PUT", base+"/a", withMeta("a", upd)), none)
	set := e.must(200, "PATCH", base+"/a", `{"metadata":{"labels":{"l":"1"},"annotations":{"a":"1"},"finalizers":["example.com/f"]}}`,
		"Content-Type", jsonMerge)
	expect("merge patch sets", set, map[string]any{"labels": map[string]any{"l": "1"}, "annotations": map[string]any{"a": "1"},
		"finalizers": []any{"example.com/f"}})
	expect("merge patch empties", e.must(200, "PATCH", base+"/a", `{"metadata":{"labels":{"l":null},"annotations":{"a":null}}}`,
		"Content-Type", jsonMerge), map[string]any{"finalizers": []any{"example.com/f"}})
	expect("json patch empties", e.must(200, "PATCH", base+"/a",
		`[{"op":"replace","path":"/metadata/finalizers","value":[]},{"op":"add","path":"/metadata/labels","value":{}},{"op":"add","path":"/metadata/ownerReferences","value":[]}]`,
		"Content-Type", "application/json-patch+json"), none)
	// Watchers see what the writes answered (the update changed
	// nothing, so it made no event).
	expect("watch create with nulls", w.expect("ADDED", "n").Object, none)
	w.expect("ADDED", "v")
	w.expect("MODIFIED", "a")
	expect("watch merge patch empties", w.expect("MODIFIED", "a").Object, map[string]any{"finalizers": []any{"example.com/f"}})
	expect("watch json patch empties", w.expect("MODIFIED", "a").Object, none)

	// An apply's empty maps are gone from the object but owned, as
	// kube's field manager records the configuration's (an empty list
	// names no field).
	applied := e.must(201, "PATCH", base+"/k?fieldManager=m", withMeta("k", empties()), "Content-Type", applyCT)
	expect("apply", applied, none)
	mf, _ := json.Marshal(path(applied, "metadata", "managedFields"))
	var entries []struct {
		FieldsV1 map[string]any `json:"fieldsV1"`
	}
	if err := json.Unmarshal(mf, &entries); err != nil || len(entries) != 1 {
		t.Fatalf("apply managedFields: %s", mf)
	}
	owned := slices.Sorted(maps.Keys(entries[0].FieldsV1["f:metadata"].(map[string]any)))
	if want := []string{"f:annotations", "f:labels"}; !slices.Equal(owned, want) {
		t.Errorf("apply owns %v, want %v", owned, want)
	}
	// An empty managedFields on an update leaves the entries alone.
	kept := e.must(200, "PATCH", base+"/k?fieldManager=other", `{"metadata":{"managedFields":[],"labels":{}}}`, "Content-Type", jsonMerge)
	if got, _ := json.Marshal(path(kept, "metadata", "managedFields")); string(got) != string(mf) {
		t.Errorf("managedFields after an empty list:\n got %s\nwant %s", got, mf)
	}
}

// equalJSON reports whether a and b encode to the same JSON.
func equalJSON(a, b any) bool {
	ab, aerr := json.Marshal(a)
	bb, berr := json.Marshal(b)
	return aerr == nil && berr == nil && string(ab) == string(bb)
}
