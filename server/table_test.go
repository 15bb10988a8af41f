package server

import (
	"strings"
	"testing"
	"time"
)

func TestTableOutput(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("t1", nil, map[string]string{"a": "1", "b": "2"}))
	e.must(201, "POST", "/api/v1/namespaces/default/pods", map[string]any{
		"metadata": map[string]any{"name": "p"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}, map[string]any{"name": "d", "image": "i"}}},
	})
	// Status is the server's on create (kube's strategy): set it through /status.
	// (kube's printer counts a container ready only while it runs.)
	e.must(200, "PATCH", "/api/v1/namespaces/default/pods/p/status",
		`{"status":{"phase":"Running","containerStatuses":[{"name":"c","image":"i","imageID":"","ready":true,"restartCount":3,"state":{"running":{}}}]}}`,
		"Content-Type", "application/merge-patch+json")
	tbl := e.must(200, "GET", "/api/v1/configmaps", nil, "Accept", tableAccept)
	if tbl["kind"] != "Table" || tbl["apiVersion"] != "meta.k8s.io/v1" || path(tbl, "metadata", "resourceVersion") == nil {
		t.Fatalf("table: %v", tbl)
	}
	names := []string{}
	for _, c := range tbl["columnDefinitions"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if len(names) != 3 || names[0] != "Name" || names[1] != "Data" || names[2] != "Age" {
		t.Fatalf("columns %v", names)
	}
	row := tbl["rows"].([]any)[0].(map[string]any)
	if cells := row["cells"].([]any); cells[0] != "t1" || cells[1] != float64(2) {
		t.Fatalf("cells %v", cells)
	}
	// kubectl get -A needs the namespace from the row's partial object.
	obj := row["object"].(map[string]any)
	if obj["kind"] != "PartialObjectMetadata" || path(obj, "metadata", "namespace") != "default" {
		t.Fatalf("row object %v", obj)
	}
	full := e.must(200, "GET", cmPath+"?includeObject=Object", nil, "Accept", tableAccept)
	if o := full["rows"].([]any)[0].(map[string]any)["object"].(map[string]any); o["kind"] != "ConfigMap" || path(o, "data", "a") != "1" {
		t.Fatalf("includeObject=Object: %v", o)
	}
	pods := e.must(200, "GET", "/api/v1/namespaces/default/pods/p", nil, "Accept", tableAccept)
	if cells := pods["rows"].([]any)[0].(map[string]any)["cells"].([]any); cells[1] != "1/2" || cells[2] != "Running" || cells[3] != "3" {
		t.Fatalf("pod cells %v", cells)
	}
	ns := e.must(200, "GET", "/api/v1/namespaces/default", nil, "Accept", tableAccept)
	if cells := ns["rows"].([]any)[0].(map[string]any)["cells"].([]any); cells[1] != "Active" {
		t.Fatalf("namespace cells %v", cells)
	}
	// Partial metadata lists, as metadata informers ask.
	pl := e.must(200, "GET", cmPath, nil, "Accept", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json")
	if pl["kind"] != "PartialObjectMetadataList" || path(pl["items"].([]any)[0].(map[string]any), "data") != nil {
		t.Fatalf("partial list %v", pl)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Second: "5s", 150 * time.Second: "2m30s", 30 * time.Minute: "30m",
		5*time.Hour + 10*time.Minute: "5h10m", 20 * time.Hour: "20h", 50 * time.Hour: "2d2h",
		30 * 24 * time.Hour: "30d", 3 * 365 * 24 * time.Hour: "3y",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("%v: got %s want %s", d, got, want)
		}
	}
}

// TestTableRowObjectNull: a row without its object (includeObject=None)
// has "object": null, as kube-apiserver encodes the row's empty
// RawExtension, in a list's, a GET's and a watch event's Table, and in
// YAML; with Metadata or Object it holds them.
func TestTableRowObjectNull(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("n", map[string]string{"t": "null"}, nil))
	rowObject := func(tbl map[string]any) (any, bool) {
		t.Helper()
		rows, _ := tbl["rows"].([]any)
		if len(rows) != 1 {
			t.Fatalf("rows: %v", tbl)
		}
		obj, ok := rows[0].(map[string]any)["object"]
		return obj, ok
	}
	// The list's items and the GET's object: the same one.
	for _, p := range []string{cmPath + "?labelSelector=t%3Dnull&", cmPath + "/n?"} {
		if obj, ok := rowObject(e.must(200, "GET", p+"includeObject=None", nil, "Accept", tableAccept)); !ok || obj != nil {
			t.Errorf("%s, includeObject=None: object %v (present %t), want null", p, obj, ok)
		}
		for include, kind := range map[string]string{"Metadata": "PartialObjectMetadata", "Object": "ConfigMap", "": "PartialObjectMetadata"} {
			obj, _ := rowObject(e.must(200, "GET", p+"includeObject="+include, nil, "Accept", tableAccept))
			if m, _ := obj.(map[string]any); m["kind"] != kind {
				t.Errorf("%s, includeObject=%s: object %v, want a %s", p, include, obj, kind)
			}
		}
	}
	if r := e.do("GET", cmPath+"/n?includeObject=None", nil, "Accept", "application/yaml;as=Table;v=v1;g=meta.k8s.io"); !strings.Contains(string(r.body), "\n  object: null\n") {
		t.Errorf("YAML Table: %d %s", r.code, r.body)
	}
	w := e.watch(cmPath+"?watch=1&labelSelector=t%3Dnull&includeObject=None", "Accept", tableAccept)
	ev := w.expect("ADDED", "")
	if obj, ok := rowObject(ev.Object); !ok || obj != nil {
		t.Errorf("watch, includeObject=None: object %v (present %t), want null", obj, ok)
	}
}

// TestTableIncludeObjectRefused: an includeObject kube does not know is
// its 400, with its message: for a list and a GET once the answer is read
// (a missing object is a 404 first), and for a watch before it starts,
// not as an event. Partial metadata has no Table options to check.
func TestTableIncludeObjectRefused(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("a", nil, nil))
	msg := `Unable to convert to Table as requested: includeObject: Invalid value: "Bogus": must be 'Metadata', 'Object', 'None', or empty`
	for _, p := range []string{cmPath, cmPath + "/a", cmPath + "?watch=1", cmPath + "?watch=1&timeoutSeconds=-1", "/api/v1/watch/namespaces/default/configmaps"} {
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		e.expectStatus(400, "BadRequest", msg, "GET", p+sep+"includeObject=Bogus", nil, "Accept", tableAccept)
	}
	e.expectStatus(404, "NotFound", "", "GET", cmPath+"/nope?includeObject=Bogus", nil, "Accept", tableAccept)
	e.must(200, "GET", cmPath+"?includeObject=Bogus", nil, "Accept", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
	// The first value counts, as kube's parameter codec reads it.
	e.must(200, "GET", cmPath+"?includeObject=None&includeObject=Bogus", nil, "Accept", tableAccept)
}
