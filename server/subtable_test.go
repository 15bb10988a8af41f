package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Accept headers of the meta.k8s.io forms, as kubectl and the metadata
// client send them.
const (
	tableOnly     = "application/json;as=Table;v=v1;g=meta.k8s.io"
	tableOrJSON   = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"
	partialJSON   = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	partialProto  = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io"
	partialList   = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
	mediaTypes406 = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
)

// TestSubresourceTables: a Table of a subresource is what kube's storage
// behind it converts to: a built-in workload's Scale by kube's printer
// (Name, Desired, Available, Age), a custom resource's by its scale
// columns (Name, Desired, Available, Age as a date), a status as the
// object's own Table, each row's object as includeObject says; a
// subresource whose storage makes no Table (ephemeralcontainers, eviction,
// binding, token, a CRD's status) refuses one as a media type: the 406
// naming the media types before anything is done (the pod is neither
// evicted nor bound), or the next clause of Accept.
func TestSubresourceTables(t *testing.T) {
	e := newEnv(t, withServiceAccountTokens(t))
	const ns = "/api/v1/namespaces/default"
	deployments := "/apis/apps/v1/namespaces/default/deployments"
	e.must(201, "POST", deployments, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}}})
	e.must(201, "POST", ns+"/serviceaccounts", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot"}})
	for _, p := range []string{"p", "evicted", "bound"} {
		e.must(201, "POST", ns+"/pods", podJSON(p, "", "c"))
	}
	e.must(201, "POST", crdPath, scaleCRD())
	widgets := "/apis/example.com/v1/namespaces/default/widgets"
	w := widget("w", "v1")
	w["spec"].(map[string]any)["replicas"] = 2
	e.must(201, "POST", widgets, w)

	table := func(path, accept string) map[string]any {
		t.Helper()
		got := e.do("GET", path, nil, "Accept", accept)
		m := got.json(t)
		if got.code != 200 || got.hdr.Get("Content-Type") != "application/json" || m["kind"] != "Table" || m["apiVersion"] != "meta.k8s.io/v1" {
			t.Fatalf("GET %s [%s]: %d %s %s", path, accept, got.code, got.hdr.Get("Content-Type"), got.body)
		}
		return m
	}
	columns := func(m map[string]any) string {
		var cols []string
		for _, c := range m["columnDefinitions"].([]any) {
			c := c.(map[string]any)
			cols = append(cols, c["name"].(string)+":"+c["type"].(string)+":"+c["format"].(string))
		}
		return strings.Join(cols, ",")
	}
	row := func(m map[string]any) map[string]any { return m["rows"].([]any)[0].(map[string]any) }

	scale := e.must(200, "GET", deployments+"/web/scale", nil)
	tbl := table(deployments+"/web/scale", tableOnly)
	if got, want := columns(tbl), "Name:string:,Desired:integer:,Available:integer:,Age:string:"; got != want {
		t.Errorf("Scale's columns %s, want %s", got, want)
	}
	cells := row(tbl)["cells"].([]any)
	if len(tbl["rows"].([]any)) != 1 || len(cells) != 4 || cells[0] != "web" || cells[1] != float64(1) || cells[2] != float64(0) {
		t.Errorf("Scale's row: %v", tbl["rows"])
	}
	if path(tbl, "metadata", "resourceVersion") != path(scale, "metadata", "resourceVersion") ||
		path(row(tbl), "object", "kind") != "PartialObjectMetadata" || path(row(tbl), "object", "apiVersion") != "meta.k8s.io/v1" ||
		path(row(tbl), "object", "metadata", "uid") != path(scale, "metadata", "uid") {
		t.Errorf("Scale's Table: %v", tbl)
	}
	if o := row(table(deployments+"/web/scale?includeObject=Object", tableOnly))["object"]; path(o.(map[string]any), "kind") != "Scale" ||
		path(o.(map[string]any), "apiVersion") != "autoscaling/v1" || path(o.(map[string]any), "spec", "replicas") != float64(1) {
		t.Errorf("Scale's row with its object: %v", o)
	}
	if r := row(table(deployments+"/web/scale?includeObject=None", tableOnly)); r["object"] != nil {
		t.Errorf("Scale's row without its object: %v", r)
	}
	e.expectStatus(400, "BadRequest", `Unable to convert to Table as requested: includeObject: Invalid value: "bogus": must be 'Metadata', 'Object', 'None', or empty`,
		"GET", deployments+"/web/scale?includeObject=bogus", nil, "Accept", tableOnly)
	// A write answers with the Table of the Scale written.
	got := e.do("PUT", deployments+"/web/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":3}}`, "Accept", tableOnly)
	if m := got.json(t); got.code != 200 || m["kind"] != "Table" || row(m)["cells"].([]any)[1] != float64(3) {
		t.Errorf("PUT scale [%s]: %d %s", tableOnly, got.code, got.body)
	}

	tbl = table(widgets+"/w/scale", tableOnly)
	if got, want := columns(tbl), "Name:string:name,Desired:integer:,Available:integer:,Age:date:"; got != want {
		t.Errorf("a custom resource's Scale's columns %s, want %s", got, want)
	}
	if cells := row(tbl)["cells"].([]any); len(cells) != 4 || cells[0] != "w" || cells[1] != float64(2) || cells[2] != float64(0) ||
		path(row(tbl), "object", "metadata", "name") != "w" {
		t.Errorf("a custom resource's Scale's row: %v", tbl["rows"])
	}
	if got, want := columns(table(ns+"/pods/p/status", tableOnly)), columns(table(ns+"/pods/p", tableOnly)); got != want {
		t.Errorf("a pod's status's columns %s, want the pod's %s", got, want)
	}

	// No Table: 406, before the pod is evicted or bound.
	for _, r := range []struct{ method, path, body string }{
		{"GET", ns + "/pods/p/ephemeralcontainers", ""},
		{"GET", ns + "/pods/p/resize", ""},
		{"POST", ns + "/pods/evicted/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"evicted"}}`},
		{"POST", ns + "/pods/bound/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bound"},"target":{"kind":"Node","name":"n1"}}`},
		{"POST", ns + "/serviceaccounts/robot/token", `{"spec":{"audiences":["x"]}}`},
		{"GET", crdPath + "/widgets.example.com/status", ""},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		e.expectStatus(406, "NotAcceptable", mediaTypes406, r.method, r.path, body, "Accept", tableOnly)
	}
	if p := e.must(200, "GET", ns+"/pods/bound", nil); path(p, "spec", "nodeName") != nil {
		t.Errorf("bound: %v", p["spec"])
	}
	e.must(200, "GET", ns+"/pods/evicted", nil)
	// kubectl's Accept falls back to the object.
	if m := e.must(200, "GET", ns+"/pods/p/ephemeralcontainers", nil, "Accept", tableOrJSON); m["kind"] != "Pod" {
		t.Errorf("ephemeralcontainers [%s]: %v", tableOrJSON, m)
	}
	if m := e.must(201, "POST", ns+"/serviceaccounts/robot/token", `{"spec":{"audiences":["x"]}}`, "Accept", tableOrJSON); m["kind"] != "TokenRequest" {
		t.Errorf("token [%s]: %v", tableOrJSON, m)
	}
}

// TestSubresourcePartialMetadata: partial metadata of a subresource's
// answer is that of the object the subresource answers with, as kube's
// handler transforms it: a Scale's (a built-in workload's or a custom
// resource's), a TokenRequest's, in JSON or protobuf, of the version
// asked for; a PartialObjectMetadataList is kube's 406 naming the type
// kube's storage answers with.
func TestSubresourcePartialMetadata(t *testing.T) {
	e := newEnv(t, withServiceAccountTokens(t))
	const ns = "/api/v1/namespaces/default"
	rcs := ns + "/replicationcontrollers"
	e.must(201, "POST", rcs, map[string]any{"apiVersion": "v1", "kind": "ReplicationController", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": 1, "selector": map[string]any{"app": "web"}, "template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}}})
	e.must(201, "POST", ns+"/serviceaccounts", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot"}})
	e.must(201, "POST", crdPath, scaleCRD())
	widgets := "/apis/example.com/v1/namespaces/default/widgets"
	w := widget("w", "v1")
	w["spec"].(map[string]any)["replicas"] = 2
	e.must(201, "POST", widgets, w)

	for _, p := range []string{rcs + "/web/scale", widgets + "/w/scale"} {
		scale := e.must(200, "GET", p, nil)
		m := e.must(200, "GET", p, nil, "Accept", partialJSON)
		if want := map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": scale["metadata"]}; jsonString(t, m) != jsonString(t, want) {
			t.Errorf("GET %s [%s]:\n got  %v\n want %v", p, partialJSON, m, want)
		}
		got := e.do("GET", p, nil, "Accept", partialProto)
		var po metav1.PartialObjectMetadata
		if got.code != 200 || got.hdr.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || !bytes.HasPrefix(got.body, protoMagic) ||
			!bytes.Contains(got.body, []byte("meta.k8s.io/v1beta1")) {
			t.Fatalf("GET %s [%s]: %d %s %q", p, partialProto, got.code, got.hdr.Get("Content-Type"), got.body)
		}
		if err := po.Unmarshal(unknownRaw(t, got.body[len(protoMagic):])); err != nil || string(po.UID) != path(scale, "metadata", "uid") || po.Name != path(scale, "metadata", "name") {
			t.Errorf("GET %s [%s]: %v %+v", p, partialProto, err, po)
		}
	}
	e.expectStatus(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the requested object is not a list (*autoscaling.Scale)",
		"GET", rcs+"/web/scale", nil, "Accept", partialList)
	e.expectStatus(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the requested object is not a list (*v1.Scale)",
		"GET", widgets+"/w/scale", nil, "Accept", partialList)

	m := e.must(201, "POST", ns+"/serviceaccounts/robot/token", `{"spec":{"audiences":["x"]}}`, "Accept", partialJSON)
	if m["kind"] != "PartialObjectMetadata" || path(m, "metadata", "name") != "robot" || m["status"] != nil {
		t.Errorf("token [%s]: %v", partialJSON, m)
	}
	e.expectStatus(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the requested object is not a list (*authentication.TokenRequest)",
		"POST", ns+"/serviceaccounts/robot/token", `{"spec":{"audiences":["x"]}}`, "Accept", partialList)

	// An eviction's and a binding's Success Status pass through the
	// transformation: protobuf when partial metadata is asked for in
	// protobuf.
	e.must(201, "POST", ns+"/pods", podJSON("evicted", "", "c"))
	e.must(201, "POST", ns+"/pods", podJSON("bound", "", "c"))
	for _, r := range []struct{ path, body string }{
		{ns + "/pods/evicted/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"evicted"},"deleteOptions":{"dryRun":["All"]}}`},
		{ns + "/pods/bound/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bound"},"target":{"kind":"Node","name":"n1"}}`},
	} {
		got := e.do("POST", r.path, r.body, "Accept", partialProto)
		var st metav1.Status
		if got.code != 201 || got.hdr.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || !bytes.HasPrefix(got.body, protoMagic) {
			t.Fatalf("POST %s [%s]: %d %s %q", r.path, partialProto, got.code, got.hdr.Get("Content-Type"), got.body)
		}
		if err := st.Unmarshal(unknownRaw(t, got.body[len(protoMagic):])); err != nil || st.Status != "Success" || st.Code != 201 {
			t.Errorf("POST %s [%s]: %v %+v", r.path, partialProto, err, st)
		}
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
