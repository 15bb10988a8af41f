package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
)

// TestKubeListPrintersSameAsOurs: kube's list printers of FlowSchemas and
// StorageClasses do more than print each object: FlowSchemas are sorted by
// matching precedence, then name, page by page, and the effective default
// StorageClass (the newest annotated as default) is "NAME (default)". The
// Tables of the same lists, pages, GETs and watches must have the same
// rows on kube and on serve.
func TestKubeListPrintersSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	fss := "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	scs := "/apis/storage.k8s.io/v1/storageclasses"
	sel := "labelSelector=lw-test%3D" + ns
	var rvs [2]string
	for i, c := range []*rawClient{kube, ours} {
		rvs[i] = c.listRV(fss)
		for _, fs := range []struct {
			name       string
			precedence int
		}{{"zz", 2}, {"aa", 9999}, {"mm", 500}, {"ll", 500}} {
			body := fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"%s-%s","labels":{"lw-test":"%s"}},
				"spec":{"matchingPrecedence":%d,"priorityLevelConfiguration":{"name":"global-default"}}}`, fs.name, ns, ns, fs.precedence)
			if code, m := c.do("POST", fss, jsonCT, body); code != http.StatusCreated {
				t.Fatalf("flowschema: %d %v", code, m)
			}
			t.Cleanup(func() { c.do("DELETE", fss+"/"+fs.name+"-"+ns, "", "") })
		}
		for _, sc := range []struct{ name, def string }{{"plain", ""}, {"old", "true"}, {"new", "true"}} {
			body := fmt.Sprintf(`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"%s-%s","labels":{"lw-test":"%s"},
				"annotations":{"storageclass.kubernetes.io/is-default-class":"%s"}},"provisioner":"example.com/p"}`, sc.name, ns, ns, sc.def)
			if code, m := c.do("POST", scs, jsonCT, body); code != http.StatusCreated {
				t.Fatalf("storageclass: %d %v", code, m)
			}
			t.Cleanup(func() { c.do("DELETE", scs+"/"+sc.name+"-"+ns, "", "") })
		}
	}
	// Every FlowSchema: the bootstrap ones both servers make, and ours
	// (others' left on the shared kube are not compared).
	k, o := kube.tableRows(fss), ours.tableRows(fss)
	k = slices.DeleteFunc(k, func(r string) bool { return !slices.Contains(o, r) })
	o = slices.DeleteFunc(o, func(r string) bool { return !slices.Contains(k, r) })
	if !slices.Equal(k, o) || len(k) < 10 {
		t.Errorf("flowschemas:\nkube %q\nours %q", k, o)
	}
	for _, path := range []string{
		fss + "?" + sel, fss + "?limit=2&" + sel, fss + "/aa-" + ns,
		scs + "?" + sel, scs + "?limit=2&" + sel, scs + "?fieldSelector=metadata.name%3Dold-" + ns, scs + "/new-" + ns,
	} {
		if k, o := kube.tableRows(path), ours.tableRows(path); !slices.Equal(k, o) || len(k) == 0 {
			t.Errorf("%s:\nkube %q\nours %q", path, k, o)
		}
	}
	// A watch's Table prints each event's object alone, in order.
	q := "?watch=1&timeoutSeconds=1&" + sel + "&resourceVersion="
	if k, o := kube.tableRows(fss+q+rvs[0]), ours.tableRows(fss+q+rvs[1]); !slices.Equal(k, o) || len(k) != 4 {
		t.Errorf("watch:\nkube %q\nours %q", k, o)
	}
}

// tableRows are the first cells (the name, and for a FlowSchema its
// priority level and precedence) of the rows of path's Tables: one Table,
// or a watch's, one per event.
func (c *rawClient) tableRows(path string) []string {
	c.t.Helper()
	code, _, b := c.send("GET", path, "", "application/json;as=Table;g=meta.k8s.io;v=v1", "")
	if code != http.StatusOK {
		c.t.Fatalf("%s: %d %s", path, code, b)
	}
	var rows []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var tbl struct {
			Rows []struct {
				Cells []any `json:"cells"`
			} `json:"rows"`
			Object *struct {
				Rows []struct {
					Cells []any `json:"cells"`
				} `json:"rows"`
			} `json:"object"`
		}
		if err := dec.Decode(&tbl); err != nil {
			c.t.Fatalf("%s: %v", path, err)
		}
		rs := tbl.Rows
		if tbl.Object != nil { // a watch event
			rs = tbl.Object.Rows
		}
		for _, r := range rs {
			rows = append(rows, fmt.Sprint(r.Cells[:min(3, len(r.Cells))]))
		}
	}
	return rows
}
