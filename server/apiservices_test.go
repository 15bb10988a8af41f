package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

const apiServicesPath = "/apis/apiregistration.k8s.io/v1/apiservices"

// normalizedAPIServices lists the APIServices without what differs from
// one server to the next (uid, resourceVersion, times).
func normalizedAPIServices(t *testing.T, e *env) []any {
	t.Helper()
	l := e.must(200, "GET", apiServicesPath, nil)
	items, _ := l["items"].([]any)
	for _, it := range items {
		m := it.(map[string]any)
		md := m["metadata"].(map[string]any)
		for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "generation"} {
			delete(md, k)
		}
		mf, _ := md["managedFields"].([]any)
		for _, f := range mf {
			delete(f.(map[string]any), "time")
		}
		if st, ok := m["status"].(map[string]any); ok {
			for _, c := range st["conditions"].([]any) {
				delete(c.(map[string]any), "lastTransitionTime")
			}
		}
	}
	sort.Slice(items, func(i, j int) bool {
		return path(items[i].(map[string]any), "metadata", "name").(string) < path(items[j].(map[string]any), "metadata", "name").(string)
	})
	return items
}

// TestAPIServicesLikeKube: a fresh server holds the APIServices
// kube-apiserver v1.37.2 holds after its start (recorded from it in
// testdata), labels, specs and status included.
func TestAPIServicesLikeKube(t *testing.T) {
	e := newEnv(t)
	b, err := os.ReadFile("testdata/kube-v1.37.2/apiservices.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	// Recorded with kubectl -o json, which gives each item apiVersion and
	// kind; kube's list items (and serve's) have none.
	for _, it := range want {
		delete(it.(map[string]any), "apiVersion")
		delete(it.(map[string]any), "kind")
	}
	got := normalizedAPIServices(t, e)
	for _, it := range got { // the built-in ones only
		if path(it.(map[string]any), "metadata", "labels", "kube-aggregator.kubernetes.io/automanaged") != "onstart" {
			t.Fatalf("not onstart: %v", it)
		}
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("APIServices differ from kube's:\n%s", g)
	}
}

// TestAPIServicesTable: kube-aggregator's columns.
func TestAPIServicesTable(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", apiServicesPath, map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.ext.example.com"},
		"spec": map[string]any{"group": "ext.example.com", "version": "v1", "groupPriorityMinimum": 10, "versionPriority": 10,
			"service": map[string]any{"namespace": "default", "name": "ext"}, "insecureSkipTLSVerify": true}})
	tbl := e.must(200, "GET", apiServicesPath, nil, "Accept", tableAccept)
	var names []string
	for _, c := range tbl["columnDefinitions"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if !reflect.DeepEqual(names, []string{"Name", "Service", "Available", "Age"}) {
		t.Fatalf("columns %v", names)
	}
	rows := map[string][]any{}
	for _, r := range tbl["rows"].([]any) {
		cells := r.(map[string]any)["cells"].([]any)
		rows[cells[0].(string)] = cells
	}
	if c := rows["v1.apps"]; len(c) != 4 || c[1] != "Local" || c[2] != "True" {
		t.Fatalf("v1.apps row %v", c)
	}
	if c := rows["v1.ext.example.com"]; len(c) != 4 || c[1] != "default/ext" || c[2] != "Unknown" {
		t.Fatalf("v1.ext.example.com row %v", c)
	}
}

func apiServiceGone(e *env, name string) func() bool {
	return func() bool { return e.do("GET", apiServicesPath+"/"+name, nil).code == 404 }
}

func apiServiceHas(e *env, name string, cond func(map[string]any) bool) func() bool {
	return func() bool {
		r := e.do("GET", apiServicesPath+"/"+name, nil)
		return r.code == 200 && cond(r.json(e.t))
	}
}

// TestAPIServicesOfCRDs: a CRD's served group-versions get APIServices
// (automanaged "true", priorities 1000/100, Available), kept in sync
// while the server runs, removed when no CRD serves them any more.
func TestAPIServicesOfCRDs(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1", "v2"))
	for _, v := range []string{"v1", "v2"} {
		waitFor(t, apiServiceHas(e, v+".example.com", func(m map[string]any) bool { return true }))
		got := e.must(200, "GET", apiServicesPath+"/"+v+".example.com", nil)
		if path(got, "metadata", "labels", "kube-aggregator.kubernetes.io/automanaged") != "true" ||
			path(got, "spec", "group") != "example.com" || path(got, "spec", "version") != v ||
			path(got, "spec", "groupPriorityMinimum") != 1000.0 || path(got, "spec", "versionPriority") != 100.0 ||
			path(got, "spec", "service") != nil {
			t.Fatalf("%s: %v", v, got)
		}
		c := path(got, "status", "conditions").([]any)[0].(map[string]any)
		if c["type"] != "Available" || c["status"] != "True" || c["reason"] != "Local" || c["message"] != "Local APIServices are always available" {
			t.Fatalf("%s status %v", v, got["status"])
		}
	}

	// Kept in sync: an edit of the spec is undone, a delete re-created.
	e.must(200, "PATCH", apiServicesPath+"/v1.example.com", `{"spec":{"versionPriority":7}}`, "Content-Type", "application/merge-patch+json")
	waitFor(t, apiServiceHas(e, "v1.example.com", func(m map[string]any) bool { return path(m, "spec", "versionPriority") == 100.0 }))
	old := e.must(200, "GET", apiServicesPath+"/v1.example.com", nil)
	e.must(200, "DELETE", apiServicesPath+"/v1.example.com", nil)
	waitFor(t, apiServiceHas(e, "v1.example.com", func(m map[string]any) bool {
		return path(m, "metadata", "uid") != path(old, "metadata", "uid")
	}))

	// The CRD stops serving v2: its APIService goes; the CRD goes: v1's.
	crd := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
	vs := path(crd, "spec", "versions").([]any)
	vs[1].(map[string]any)["served"] = false
	e.must(200, "PUT", crdPath+"/widgets.example.com", crd)
	waitFor(t, apiServiceGone(e, "v2.example.com"))
	e.must(200, "GET", apiServicesPath+"/v1.example.com", nil)
	e.deleteCRD("widgets.example.com", nil)
	waitFor(t, apiServiceGone(e, "v1.example.com"))

	// An APIService a user labels "true" that no CRD serves is deleted,
	// as kube's autoregister does; one without the label is left alone.
	mk := func(name string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": name, "labels": labels},
			"spec":     map[string]any{"group": "mine.example.com", "version": name[:2], "groupPriorityMinimum": 10, "versionPriority": 10}}
	}
	e.must(201, "POST", apiServicesPath, mk("v1.mine.example.com", map[string]any{"kube-aggregator.kubernetes.io/automanaged": "true"}))
	e.must(201, "POST", apiServicesPath, mk("v2.mine.example.com", nil))
	waitFor(t, apiServiceGone(e, "v1.mine.example.com"))
	// The unlabelled one is still there, and marked available (Local).
	waitFor(t, apiServiceHas(e, "v2.mine.example.com", func(m map[string]any) bool {
		cs, _ := path(m, "status", "conditions").([]any)
		return len(cs) == 1 && cs[0].(map[string]any)["status"] == "True"
	}))
}

// TestAPIServicesOnStart: the built-in ones are synced once at start: an
// edit or a delete stays until the next start, which undoes it; a start
// over storage that already matches writes nothing.
func TestAPIServicesOnStart(t *testing.T) {
	dir := t.TempDir()
	start := func() (*env, func()) { return startEnvOnDir(t, dir) }
	e, stop := start()
	if n := e.srv.apiServices.writeCount(); n != len(e.srv.apiServices.builtin) || n != 22 {
		t.Fatalf("fresh start: %d writes for %d APIServices", n, len(e.srv.apiServices.builtin))
	}
	e.must(200, "PATCH", apiServicesPath+"/v1.apps", `{"spec":{"versionPriority":7}}`, "Content-Type", "application/merge-patch+json")
	e.must(200, "DELETE", apiServicesPath+"/v1.batch", nil)
	// A later CRD event makes the controller look again: still no reset.
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	waitFor(t, apiServiceHas(e, "v1.example.com", func(map[string]any) bool { return true }))
	if got := e.must(200, "GET", apiServicesPath+"/v1.apps", nil); path(got, "spec", "versionPriority") != 7.0 {
		t.Fatalf("v1.apps reset while running: %v", got["spec"])
	}
	e.expectStatus(404, "NotFound", "", "GET", apiServicesPath+"/v1.batch", nil)
	stop()

	e2, stop2 := start()
	if got := e2.must(200, "GET", apiServicesPath+"/v1.apps", nil); path(got, "spec", "versionPriority") != 15.0 {
		t.Fatalf("v1.apps not reset at start: %v", got["spec"])
	}
	e2.must(200, "GET", apiServicesPath+"/v1.batch", nil)
	e2.must(200, "GET", apiServicesPath+"/v1.example.com", nil)
	if n := e2.srv.apiServices.writeCount(); n != 2 {
		t.Fatalf("restart after an edit and a delete: %d writes, want 2", n)
	}
	stop2()

	e3, stop3 := start()
	defer stop3()
	if n := e3.srv.apiServices.writeCount(); n != 0 {
		t.Fatalf("restart over matching APIServices: %d writes", n)
	}
}

// TestAPIServicesManagedFields: writes of APIServices record
// managedFields, as kube's do (the type converter knows the aggregator's
// kinds).
func TestAPIServicesManagedFields(t *testing.T) {
	e := newEnv(t)
	got := e.must(201, "POST", apiServicesPath+"?fieldManager=me", map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.mf.example.com"},
		"spec":     map[string]any{"group": "mf.example.com", "version": "v1", "groupPriorityMinimum": 10, "versionPriority": 10}})
	mf, _ := path(got, "metadata", "managedFields").([]any)
	if len(mf) != 1 || mf[0].(map[string]any)["manager"] != "me" || path(mf[0].(map[string]any), "fieldsV1", "f:spec", "f:group") == nil {
		t.Fatalf("managedFields %v", mf)
	}
}

// failFirstCreate fails the first create of one key.
type failFirstCreate struct {
	storage.Interface
	key    string
	failed atomic.Bool
}

func (f *failFirstCreate) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if key == f.key && f.failed.CompareAndSwap(false, true) {
		return 0, errors.New("injected failure")
	}
	return f.Interface.Create(ctx, key, value)
}

// TestAPIServicesRetry: a write that fails at start is retried.
func TestAPIServicesRetry(t *testing.T) {
	et := etcdtest.Start(t)
	st := &failFirstCreate{Interface: et.Store, key: "/registry/apiregistration.k8s.io/apiservices/v1.apps"}
	e := startEnv(t, st, et)
	if !st.failed.Load() {
		t.Fatal("no create of v1.apps at start")
	}
	waitFor(t, apiServiceHas(e, "v1.apps", func(m map[string]any) bool { return path(m, "spec", "groupPriorityMinimum") == 17800.0 }))
}
