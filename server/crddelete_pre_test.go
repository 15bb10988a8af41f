package server

import (
	"testing"
)

// TestCRDDeletePreconditionsChangeNothing: a CRD DELETE whose preconditions
// fail is a 409 that leaves the CRD and its custom resources as they were.
func TestCRDDeletePreconditionsChangeNothing(t *testing.T) {
	e := newEnv(t)
	base := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	e.must(201, "POST", base, widget("w1", "v1"))
	for _, pre := range []map[string]any{{"uid": "not-the-uid"}, {"resourceVersion": "1"}} {
		e.expectStatus(409, "Conflict", "", "DELETE", crdPath+"/widgets.example.com",
			map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": pre})
		crd := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
		if ts := crd["metadata"].(map[string]any)["deletionTimestamp"]; ts != nil {
			t.Fatalf("precondition %v: CRD marked for deletion at %v", pre, ts)
		}
		if l := e.must(200, "GET", base, nil); len(l["items"].([]any)) != 1 {
			t.Fatalf("precondition %v: custom resources %v", pre, l["items"])
		}
	}
	crd := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
	md := crd["metadata"].(map[string]any)
	e.deleteCRD("widgets.example.com", map[string]any{"kind": "DeleteOptions", "apiVersion": "v1",
		"preconditions": map[string]any{"uid": md["uid"], "resourceVersion": md["resourceVersion"]}})
	e.expectStatus(404, "NotFound", "", "GET", crdPath+"/widgets.example.com", nil)
}
