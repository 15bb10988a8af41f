package server

import (
	"context"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// sizeLimitedStore refuses, as etcd refuses a request too large, to
// create or update a value longer than limit bytes.
type sizeLimitedStore struct {
	storage.Interface
	limit int
}

func (s sizeLimitedStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if len(value) > s.limit {
		return 0, storage.ErrValueTooLarge
	}
	return s.Interface.Create(ctx, key, value)
}

func (s sizeLimitedStore) Update(ctx context.Context, key string, value []byte, expectRev int64) (int64, error) {
	if len(value) > s.limit {
		return 0, storage.ErrValueTooLarge
	}
	return s.Interface.Update(ctx, key, value, expectRev)
}

// TestManagedFieldsOfLargeObjects: as kube's handlers, serve records a
// write's managedFields whatever the size of its body (a create of
// 1.2 MiB too), and drops them only when the store refuses the object
// with them as too large: a create, update or patch is then tried again
// without them (kube-apiserver v1.37.2's isTooLargeError retries), an
// apply is not (its 413); an object too large without them is the 413.
func TestManagedFieldsOfLargeObjects(t *testing.T) {
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	t.Run("large body", func(t *testing.T) {
		e := newEnv(t)
		e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
		w := widget("big", "v1")
		w["data"] = map[string]string{"a": strings.Repeat("x", 1200<<10)}
		m := e.must(201, "POST", widgets, w)
		if mf, _ := path(m, "metadata", "managedFields").([]any); len(mf) != 1 {
			t.Errorf("create of 1.2 MiB: managedFields %v", path(m, "metadata", "managedFields"))
		}
		m = e.must(200, "PUT", widgets+"/big", map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "big", "resourceVersion": path(m, "metadata", "resourceVersion")}, "data": map[string]string{"b": strings.Repeat("y", 1200<<10)}}, "User-Agent", "other")
		if mf, _ := path(m, "metadata", "managedFields").([]any); len(mf) != 2 || path(mf[1].(map[string]any), "manager") != "other" {
			t.Errorf("update of 1.2 MiB: managedFields %v", path(m, "metadata", "managedFields"))
		}
	})
	t.Run("too large with them", func(t *testing.T) {
		et := etcdtest.Start(t)
		e := startEnv(t, sizeLimitedStore{Interface: et.Store, limit: 2500}, et)
		e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
		// Many fields: the object fits, its managedFields do not.
		data := map[string]string{}
		for i := range 120 {
			data["k"+strings.Repeat("0", 3)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
		}
		w := widget("many", "v1")
		w["data"] = data
		m := e.must(201, "POST", widgets, w)
		if mf := path(m, "metadata", "managedFields"); mf != nil {
			t.Errorf("create: managedFields %v", mf)
		}
		rv := path(m, "metadata", "resourceVersion")
		if mf := path(e.must(200, "GET", widgets+"/many", nil), "metadata", "managedFields"); mf != nil {
			t.Errorf("stored: managedFields %v", mf)
		}
		w["metadata"] = map[string]any{"name": "many", "resourceVersion": rv, "labels": map[string]any{"a": "b"}}
		if mf := path(e.must(200, "PUT", widgets+"/many", w), "metadata", "managedFields"); mf != nil {
			t.Errorf("update: managedFields %v", mf)
		}
		if mf := path(e.must(200, "PATCH", widgets+"/many", `{"metadata":{"labels":{"c":"d"}}}`, "Content-Type", "application/merge-patch+json"), "metadata", "managedFields"); mf != nil {
			t.Errorf("patch: managedFields %v", mf)
		}
		// An object small enough keeps them.
		if mf, _ := path(e.must(201, "POST", widgets, widget("small", "v1")), "metadata", "managedFields").([]any); len(mf) != 1 {
			t.Errorf("small create: managedFields %v", mf)
		}
		// An apply is not tried again.
		e.expectStatus(413, "RequestEntityTooLarge", "", "PATCH", widgets+"/many?fieldManager=a", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"many","labels":{"e":"f"}}}`,
			"Content-Type", "application/apply-patch+yaml")
		// Too large without them.
		w = widget("huge", "v1")
		w["data"] = map[string]string{"a": strings.Repeat("x", 5000)}
		e.expectStatus(413, "RequestEntityTooLarge", "", "POST", widgets, w)
	})
}
