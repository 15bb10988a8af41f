package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestListPrintersPrintEachItem: kube's list printer of every printed
// kind but those listPrinted names prints each item in turn, as its
// printer of one object does, so their list Tables are made a row at a
// time; those listPrinted names do not (they order the rows, or mark
// one). Two objects out of name order, both annotated as the default
// StorageClass and created a minute apart, show either.
func TestListPrintersPrintEachItem(t *testing.T) {
	for key, tk := range typedKinds {
		if !tk.printed || !tk.hasPrinter() {
			continue
		}
		var values [][]byte
		for i, name := range []string{"b", "a"} {
			v, err := json.Marshal(map[string]any{
				"apiVersion": tk.stored().GroupVersion().String(), "kind": tk.stored().Kind,
				"metadata": map[string]any{"name": name, "namespace": "default",
					"creationTimestamp": time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC).Format(time.RFC3339),
					"annotations":       map[string]any{"storageclass.kubernetes.io/is-default-class": "true"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			values = append(values, v)
		}
		rows, err := tk.printList(values)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		var listed, own [][]any
		for _, r := range rows {
			listed = append(listed, r.cells)
		}
		for _, v := range values {
			cells, err := tk.printedCells(v)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			own = append(own, cells)
		}
		if same := reflect.DeepEqual(listed, own); same == listPrinted[tk.internal.GroupKind()] {
			t.Errorf("%s: list printer's rows %v, each object's %v (listPrinted %v)", key, listed, own, !same)
		}
	}
}

const (
	flowSchemaPath   = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	storageClassPath = "/apis/storage.k8s.io/v1/storageclasses"
)

// tableNames are the Name cells of a Table's rows, in order.
func tableNames(t *testing.T, tbl map[string]any) []string {
	t.Helper()
	rows, _ := tbl["rows"].([]any)
	names := make([]string, 0, len(rows))
	for _, r := range rows {
		cells, _ := r.(map[string]any)["cells"].([]any)
		if len(cells) == 0 {
			t.Fatalf("row without cells: %v", r)
		}
		names = append(names, fmt.Sprint(cells[0]))
	}
	return names
}

// TestFlowSchemaTableOrder: kube's list printer of FlowSchemas sorts the
// rows by matching precedence, then name, page by page; a watch's Table
// has one row per event, in the events' order.
func TestFlowSchemaTableOrder(t *testing.T) {
	e := newEnv(t)
	rv := path(e.must(200, "GET", flowSchemaPath, nil), "metadata", "resourceVersion").(string)
	for _, fs := range []struct {
		name       string
		precedence int
	}{{"zz-first", 2}, {"aa-last", 9999}, {"mm-tie", 500}, {"ll-tie", 500}} {
		e.must(201, "POST", flowSchemaPath, map[string]any{
			"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": map[string]any{"name": fs.name},
			"spec": map[string]any{"matchingPrecedence": fs.precedence, "priorityLevelConfiguration": map[string]any{"name": "global-default"}},
		})
	}
	type item struct {
		name       string
		precedence float64
	}
	sorted := func(list map[string]any) []string {
		var items []item
		for _, it := range list["items"].([]any) {
			m := it.(map[string]any)
			p, _ := path(m, "spec", "matchingPrecedence").(float64)
			items = append(items, item{path(m, "metadata", "name").(string), p})
		}
		slices.SortFunc(items, func(a, b item) int {
			if a.precedence != b.precedence {
				return int(a.precedence - b.precedence)
			}
			return strings.Compare(a.name, b.name)
		})
		var names []string
		for _, it := range items {
			names = append(names, it.name)
		}
		return names
	}
	want := sorted(e.must(200, "GET", flowSchemaPath, nil))
	got := tableNames(t, e.must(200, "GET", flowSchemaPath, nil, "Accept", tableAccept))
	if !slices.Equal(got, want) {
		t.Errorf("table rows %v, want %v", got, want)
	}
	if i, j := slices.Index(got, "ll-tie"), slices.Index(got, "mm-tie"); i < 0 || j != i+1 {
		t.Errorf("ties by name: %v", got)
	}
	// A page is sorted on its own, as kube prints each page.
	list := e.must(200, "GET", flowSchemaPath+"?limit=3", nil)
	page := e.must(200, "GET", flowSchemaPath+"?limit=3", nil, "Accept", tableAccept)
	if got, want := tableNames(t, page), sorted(list); !slices.Equal(got, want) {
		t.Errorf("page rows %v, want %v", got, want)
	}
	// A GET prints its one object.
	if got := tableNames(t, e.must(200, "GET", flowSchemaPath+"/aa-last", nil, "Accept", tableAccept)); !slices.Equal(got, []string{"aa-last"}) {
		t.Errorf("get rows %v", got)
	}
	// A watch prints each event as it comes.
	w := e.watch(flowSchemaPath+"?watch=1&resourceVersion="+rv, "Accept", tableAccept)
	var events []string
	for range 4 {
		ev, ok := w.next()
		if !ok {
			t.Fatal("watch ended")
		}
		events = append(events, fmt.Sprint(path(ev.Object, "rows")))
	}
	for i, name := range []string{"zz-first", "aa-last", "mm-tie", "ll-tie"} {
		if !strings.Contains(events[i], "["+name+" ") {
			t.Errorf("watch event %d: %s, want %s's row", i, events[i], name)
		}
	}
}

// TestStorageClassTableDefault: kube's list printer of StorageClasses
// names the effective default, the newest annotated as default,
// "NAME (default)"; a GET or a watch event prints the name alone.
func TestStorageClassTableDefault(t *testing.T) {
	e := newEnv(t)
	rv := path(e.must(200, "GET", storageClassPath, nil), "metadata", "resourceVersion").(string)
	for _, name := range []string{"plain", "old-default", "new-default"} {
		md := map[string]any{"name": name}
		if name != "plain" {
			md["annotations"] = map[string]any{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		e.must(201, "POST", storageClassPath, map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": md, "provisioner": "example.com/p"})
	}
	// Created in the same second, the two defaults are told apart by
	// name: the first in order wins, as in kube's printer.
	want := []string{"new-default (default)", "old-default", "plain"}
	if got := tableNames(t, e.must(200, "GET", storageClassPath, nil, "Accept", tableAccept)); !slices.Equal(got, want) {
		t.Errorf("list rows %v, want %v", got, want)
	}
	// A page holding only the other default marks it.
	if got := tableNames(t, e.must(200, "GET", storageClassPath+"?fieldSelector=metadata.name%3Dold-default", nil, "Accept", tableAccept)); !slices.Equal(got, []string{"old-default (default)"}) {
		t.Errorf("selected rows %v", got)
	}
	if got := tableNames(t, e.must(200, "GET", storageClassPath+"/new-default", nil, "Accept", tableAccept)); !slices.Equal(got, []string{"new-default"}) {
		t.Errorf("get rows %v", got)
	}
	w := e.watch(storageClassPath+"?watch=1&resourceVersion="+rv, "Accept", tableAccept)
	for _, name := range []string{"plain", "old-default", "new-default"} {
		ev, ok := w.next()
		if !ok {
			t.Fatal("watch ended")
		}
		if got := fmt.Sprint(path(ev.Object, "rows")); !strings.Contains(got, "["+name+" ") {
			t.Errorf("watch event: %s, want %s's row", got, name)
		}
	}
}
