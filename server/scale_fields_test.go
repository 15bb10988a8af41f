package server

import (
	"encoding/json"
	"slices"
	"testing"
)

// managedEntries is an object's managedFields, each as
// "apiVersion operation subresource fieldsV1" (manager and time left out).
func managedEntries(t *testing.T, obj map[string]any) []string {
	t.Helper()
	var out []string
	for _, e := range asList(path(obj, "metadata", "managedFields")) {
		m := e.(map[string]any)
		fields, err := json.Marshal(m["fieldsV1"])
		if err != nil {
			t.Fatal(err)
		}
		sub, _ := m["subresource"].(string)
		out = append(out, m["apiVersion"].(string)+" "+m["operation"].(string)+" "+sub+" "+string(fields))
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// A write through a custom resource's /scale keeps the managed fields
// recorded in the CRD's other versions (kube maps every version of the
// CRD to its replicas path) and records the write under the scale
// subresource; a PUT of a Scale without apiVersion and kind is recorded
// for no one: kube's field manager of a custom resource's Scale cannot
// convert it and keeps the live Scale's entries.
func TestScaleManagedFieldsOfCustomResource(t *testing.T) {
	e := newEnv(t)
	crd := widgetCRD("Namespaced", "v1", "v1alpha1")
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		v.(map[string]any)["subresources"] = map[string]any{
			"status": map[string]any{},
			"scale":  map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
		}
	}
	e.must(201, "POST", crdPath, crd)
	alpha, v1 := "/apis/example.com/v1alpha1/namespaces/default/widgets", "/apis/example.com/v1/namespaces/default/widgets"
	for _, n := range []string{"u", "t"} {
		w := widget(n, "v1alpha1")
		w["spec"].(map[string]any)["replicas"] = 1
		e.must(201, "POST", alpha, w)
		e.must(200, "PATCH", v1+"/"+n+"/status", `{"status":{"replicas":1}}`, "Content-Type", "application/merge-patch+json")
	}
	// Compared as sets: kube's field manager orders the entries of one
	// operation by their time in whole seconds (then manager), so the
	// order depends on whether a second began between two writes.
	check := func(n, step string, want ...string) {
		t.Helper()
		got := managedEntries(t, e.must(200, "GET", v1+"/"+n, nil))
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("%s's managed fields after %s:\n got  %q\n want %q", n, step, got, want)
		}
	}
	const status = `example.com/v1 Update status {"f:status":{".":{},"f:replicas":{}}}`
	const color = `example.com/v1alpha1 Update  {"f:spec":{".":{},"f:color":{}}}`
	untyped := func(n string) string { return `{"metadata":{"name":"` + n + `"},"spec":{"replicas":2}}` }
	e.must(200, "PUT", alpha+"/u/scale?fieldManager=untyped", untyped("u"))
	check("u", "an untyped scale update", `example.com/v1alpha1 Update  {"f:spec":{"f:replicas":{}}}`, status, color)

	s := e.must(200, "GET", alpha+"/t/scale", nil)
	s["spec"] = map[string]any{"replicas": 3}
	e.must(200, "PUT", alpha+"/t/scale?fieldManager=typed", s)
	scaled := `example.com/v1alpha1 Update scale {"f:spec":{"f:replicas":{}}}`
	check("t", "a scale update", scaled, status, color)
	e.must(200, "PUT", alpha+"/t/scale?fieldManager=untyped", untyped("t"))
	check("t", "an untyped scale update", scaled, status, color)
}
