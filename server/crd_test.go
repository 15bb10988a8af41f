package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

func widgetCRD(scope string, versions ...string) map[string]any {
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{
			"name": v, "served": true, "storage": i == 0,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				"properties": map[string]any{"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true,
					"properties": map[string]any{"color": map[string]any{"type": "string"}}}}}},
			"additionalPrinterColumns": []any{
				map[string]any{"name": "Color", "type": "string", "jsonPath": ".spec.color"},
				map[string]any{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
			},
			"selectableFields": []any{map[string]any{"jsonPath": ".spec.color"}},
		})
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": scope,
			"names":    map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": []any{"wd"}},
			"versions": vs,
		},
	}
}

func widget(name, version string) map[string]any {
	return map[string]any{"apiVersion": "example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"color": "red"}}
}

func discoveryNames(t *testing.T, e *env, p string) []string {
	r := e.do("GET", p, nil)
	if r.code == 404 {
		return nil
	}
	var names []string
	for _, res := range r.json(t)["resources"].([]any) {
		names = append(names, res.(map[string]any)["name"].(string))
	}
	return names
}

func TestCRDNamespaced(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1", "v1beta1"))
	// The create's answer has the status kube's strategy leaves; the
	// names and conditions are written after it (crdcontrollers_test.go).
	crd := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
	conds := path(crd, "status", "conditions").([]any)
	established := false
	for _, c := range conds {
		if c.(map[string]any)["type"] == "Established" && c.(map[string]any)["status"] == "True" {
			established = true
		}
	}
	if !established || path(crd, "status", "acceptedNames", "kind") != "Widget" {
		t.Fatalf("crd status: %v", crd["status"])
	}
	if names := discoveryNames(t, e, "/apis/example.com/v1"); !slices.Contains(names, "widgets") {
		t.Fatalf("discovery: %v", names)
	}
	g := e.must(200, "GET", "/apis/example.com", nil)
	if path(g, "preferredVersion", "version") != "v1" {
		t.Fatalf("group: %v", g)
	}
	base := "/apis/example.com/v1/namespaces/default/widgets"
	w := e.must(201, "POST", base, widget("w1", "v1"))
	if path(w, "metadata", "generation") != float64(1) {
		t.Fatalf("generation: %v", w)
	}
	// Another served version sees the same object, relabelled.
	w2 := e.must(200, "GET", "/apis/example.com/v1beta1/namespaces/default/widgets/w1", nil)
	if w2["apiVersion"] != "example.com/v1beta1" {
		t.Fatalf("v1beta1 view: %v", w2)
	}
	e.expectStatus(422, "Invalid", "", "PUT", base+"/w1", widget("w1", "v1"))
	e.expectStatus(415, "UnsupportedMediaType", "", "PATCH", base+"/w1", `{"spec":{"color":"blue"}}`, "Content-Type", "application/strategic-merge-patch+json")
	p := e.must(200, "PATCH", base+"/w1", `{"spec":{"color":"blue"}}`, "Content-Type", "application/merge-patch+json")
	if path(p, "metadata", "generation") != float64(2) {
		t.Fatalf("generation after spec change: %v", p)
	}
	// A body of another kind decodes, and kube's custom resource
	// validator refuses it, named after the body's kind
	// (e2e.TestPythonClientSameAsKube compares it with kube).
	e.expectStatus(422, "Invalid", `Gadget.example.com "g" is invalid: kind: Invalid value: "Gadget": must be Widget`,
		"POST", base, map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}})
	// Selectable field from the CRD; an unknown one is refused.
	l := e.must(200, "GET", base+"?fieldSelector=spec.color%3Dblue", nil)
	if len(l["items"].([]any)) != 1 || l["kind"] != "WidgetList" {
		t.Fatalf("field selector: %v", l)
	}
	e.expectStatus(400, "BadRequest", "field label not supported: spec.size", "GET", base+"?fieldSelector=spec.size%3D1", nil)
	// Table with the printer column.
	tbl := e.must(200, "GET", base, nil, "Accept", tableAccept)
	cols := tbl["columnDefinitions"].([]any)
	if len(cols) != 3 || cols[1].(map[string]any)["name"] != "Color" {
		t.Fatalf("columns: %v", cols)
	}
	if cells := tbl["rows"].([]any)[0].(map[string]any)["cells"].([]any); cells[1] != "blue" {
		t.Fatalf("cells: %v", cells)
	}
	// Delete: a custom resource gone at once is answered with a Success
	// Status, as kube's custom resource store (no ReturnDeletedObject)
	// answers (e2e.TestPythonClientSameAsKube compares it); deleting the
	// CRD removes the resource and its objects.
	made := e.must(201, "POST", base, widget("w2", "v1"))
	d := e.must(200, "DELETE", base+"/w2", nil)
	details, _ := d["details"].(map[string]any)
	if d["kind"] != "Status" || d["status"] != "Success" || details["name"] != "w2" || details["group"] != "example.com" ||
		details["kind"] != "widgets" || details["uid"] != made["metadata"].(map[string]any)["uid"] {
		t.Fatalf("cr delete: %v", d)
	}
	e.deleteCRD("widgets.example.com", nil)
	e.expectNoRoute("GET", base)
	if names := discoveryNames(t, e, "/apis/example.com/v1"); len(names) != 0 {
		t.Fatalf("still discovered: %v", names)
	}
	res, err := e.store.List(t.Context(), "/registry/example.com/widgets/", storageListAll)
	if err != nil || len(res.Items) != 0 {
		t.Fatalf("custom resources left: %v %v", res.Items, err)
	}
}

func TestCRDClusterScopedAndSharedEtcd(t *testing.T) {
	e := newEnv(t)
	// A second server on the same etcd learns the CRD by watching.
	other := startEnv(t, e.etcd.Store, e.etcd)
	e.expectStatus(422, "Invalid", "", "POST", crdPath, func() map[string]any {
		c := widgetCRD("Cluster", "v1")
		c["metadata"].(map[string]any)["name"] = "wrong.example.com"
		return c
	}())
	e.must(201, "POST", crdPath, widgetCRD("Cluster", "v1"))
	waitFor(t, func() bool { return slices.Contains(discoveryNames(t, other, "/apis/example.com/v1"), "widgets") })
	w := other.must(201, "POST", "/apis/example.com/v1/widgets", widget("cw", "v1"))
	if path(w, "metadata", "namespace") != nil {
		t.Fatalf("cluster-scoped object has a namespace: %v", w)
	}
	e.must(200, "GET", "/apis/example.com/v1/widgets/cw", nil)
	e.expectNoRoute("GET", "/apis/example.com/v1/namespaces/default/widgets/cw")
	e.deleteCRD("widgets.example.com", nil)
	waitFor(t, func() bool { return len(discoveryNames(t, other, "/apis/example.com/v1")) == 0 })
	other.expectNoRoute("GET", "/apis/example.com/v1/widgets")
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(20 * time.Millisecond) // polling a real condition, not synchronising
	}
}

var _ = strings.Contains

// countingReaders is a Readers that reads through one shared reader and
// records which prefixes were opened and closed.
type countingReaders struct {
	shared storage.ListWatcher
	mu     sync.Mutex
	opened map[string]int
	closed map[string]int
	specs  map[string]ReaderSpec // the last opened, by prefix
}

func (c *countingReaders) Open(spec ReaderSpec) ResourceReader {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opened[spec.Prefix]++
	c.specs[spec.Prefix] = spec
	return &countingReader{ListWatcher: c.shared, c: c, prefix: spec.Prefix}
}

func (c *countingReaders) counts(prefix string) (opened, closed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened[prefix], c.closed[prefix]
}

type countingReader struct {
	storage.ListWatcher
	c      *countingReaders
	prefix string
	once   sync.Once
}

func (r *countingReader) Close() {
	r.once.Do(func() {
		r.c.mu.Lock()
		defer r.c.mu.Unlock()
		r.c.closed[r.prefix]++
	})
}

// TestRegistryOwnsReaders: the registry opens a CRD's reader when the CRD
// is served, keeps it across changes that do not affect reads (printer
// columns, status), replaces it when the selectable fields or served
// versions change (the new one extracting the new fields), and closes it
// when the CRD is deleted.
func TestRegistryOwnsReaders(t *testing.T) {
	et := etcdtest.Start(t)
	readers := &countingReaders{shared: direct.New(et.Store), opened: map[string]int{}, closed: map[string]int{}, specs: map[string]ReaderSpec{}}
	e := startEnv(t, et.Store, et, func(c *Config) { c.Readers = readers })
	const prefix = "/registry/example.com/widgets/"
	// The CRD's watch may apply a change before the write's own apply
	// does; it then closes the reader it replaced after the registry's
	// lock is released, which may be after the write has answered: the
	// counts are awaited (10 s is a deadline, not a synchronisation).
	want := func(step string, opened, closed int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			o, c := readers.counts(prefix)
			if o == opened && c == closed {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: opened %d closed %d, want %d and %d", step, o, c, opened, closed)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if o, _ := readers.counts("/registry/pods/"); o != 1 {
		t.Fatalf("built-in pods reader opened %d times at New", o)
	}
	crd := widgetCRD("Namespaced", "v1")
	v1 := crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	delete(v1, "selectableFields")
	e.must(201, "POST", crdPath, crd)
	want("create", 1, 0)
	if readers.specs[prefix].Attrs != nil {
		t.Fatal("a CRD without selectable fields got a field extractor")
	}

	update := func(mutate func(spec map[string]any)) {
		t.Helper()
		cur := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
		mutate(cur["spec"].(map[string]any))
		e.must(200, "PUT", crdPath+"/widgets.example.com", cur)
	}
	update(func(spec map[string]any) {
		spec["versions"].([]any)[0].(map[string]any)["additionalPrinterColumns"] = []any{}
	})
	want("printer columns", 1, 0)
	e.must(200, "PUT", crdPath+"/widgets.example.com/status", e.must(200, "GET", crdPath+"/widgets.example.com", nil))
	want("status", 1, 0)

	update(func(spec map[string]any) {
		spec["versions"].([]any)[0].(map[string]any)["selectableFields"] = []any{map[string]any{"jsonPath": ".spec.color"}}
	})
	want("selectable fields", 2, 1)
	_, fields, err := readers.specs[prefix].Attrs([]byte(`{"metadata":{"name":"w"},"spec":{"color":"red"}}`))
	if err != nil || fields["spec.color"] != "red" {
		t.Fatalf("new reader's fields: %v %v", fields, err)
	}

	update(func(spec map[string]any) {
		spec["versions"] = append(spec["versions"].([]any), map[string]any{"name": "v2", "served": true, "storage": false, "schema": anySchema()})
	})
	want("served versions", 3, 2)

	e.deleteCRD("widgets.example.com", nil)
	want("delete", 3, 3)
}

// TestCRDStaleEventsIgnored: the server applies its own CRD writes at
// once and sees them again, later, on its CRD watch. A CRD deleted and
// created again must not be unserved (its new reader closed, its watches
// ended) when the watch catches up with the old CRD's terminating update
// and delete.
func TestCRDStaleEventsIgnored(t *testing.T) {
	et := etcdtest.Start(t)
	readers := &countingReaders{shared: direct.New(et.Store), opened: map[string]int{}, closed: map[string]int{}, specs: map[string]ReaderSpec{}}
	e := startEnv(t, et.Store, et, func(c *Config) { c.Readers = readers })
	const prefix = "/registry/example.com/widgets/"
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	terminating := e.deleteCRD("widgets.example.com", nil)
	if path(terminating, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("deleted CRD not marked terminating: %v", terminating)
	}
	again := e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	rv, _ := strconv.ParseInt(path(again, "metadata", "resourceVersion").(string), 10, 64)
	opened, closed := readers.counts(prefix)

	// What the lagging watch delivers: the terminating update, then the delete.
	b, _ := json.Marshal(terminating)
	if err := e.srv.applyCRD(b); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.reg.setCRD("widgets.example.com", rv-1, nil); err != nil {
		t.Fatal(err)
	}
	if o, c := readers.counts(prefix); o != opened || c != closed {
		t.Fatalf("stale events reopened or closed the reader: opened %d->%d, closed %d->%d", opened, o, closed, c)
	}
	e.must(200, "GET", "/apis/example.com/v1/namespaces/default/widgets", nil)
}

// anySchema is the structural schema kube requires of every version: an
// object keeping any field.
func anySchema() map[string]any {
	return map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
}

// TestCRDTable: the CRD list's Table is kube's CRD convertor's (Name,
// Scope, Versions, Created At, and wide Group, Kind, ShortNames,
// Established), as `kubectl get crd` shows against kube.
func TestCRDTable(t *testing.T) {
	e := newEnv(t)
	created := e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1", "v1beta1"))
	tbl := e.must(200, "GET", crdPath, nil, "Accept", tableAccept)
	var names []string
	for _, c := range tbl["columnDefinitions"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if want := []string{"Name", "Scope", "Versions", "Created At", "Group", "Kind", "ShortNames", "Established"}; !slices.Equal(names, want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	rows := tbl["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	got := rows[0].(map[string]any)["cells"].([]any)
	want := []any{"widgets.example.com", "Namespaced", "v1(storage),v1beta1",
		path(created, "metadata", "creationTimestamp"), "example.com", "Widget", "wd", true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cells %v, want %v", got, want)
	}
}
