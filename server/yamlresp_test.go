package server

import (
	"encoding/json"
	"reflect"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestYAMLResponses: with Accept: application/yaml every answer but a
// watch is YAML, the JSON answer's content with keys sorted, as kube
// serves it: an object, a list, a Table, a create's answer and Status
// errors, of a built-in kind and a custom resource.
func TestYAMLResponses(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	wbase := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", wbase, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"n":1,"f":1.5}}`)
	e.must(201, "POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"k":"yes","m":"a\nb"}}`)
	for _, r := range []struct {
		method, path, body, accept string
		code                       int
	}{
		{"GET", cmPath + "/b", "", contentYAML, 200},
		{"GET", cmPath, "", contentYAML, 200},
		{"GET", cmPath + "/nope", "", contentYAML, 404},
		{"GET", cmPath + "/b", "", "application/yaml;as=Table;g=meta.k8s.io;v=v1", 200},
		{"POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, contentYAML, 201},
		{"POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, contentYAML, 409},
		{"DELETE", cmPath + "/c", "", contentYAML, 200},
		{"GET", wbase + "/w", "", contentYAML, 200},
		{"GET", wbase, "", contentYAML, 200},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		y := e.do(r.method, r.path, body, "Accept", r.accept)
		if y.code != r.code || y.hdr.Get("Content-Type") != contentYAML {
			t.Fatalf("%s %s: %d %s, want %d in YAML: %s", r.method, r.path, y.code, y.hdr.Get("Content-Type"), r.code, y.body)
		}
		if y.body[0] == '{' {
			t.Fatalf("%s %s: JSON, not YAML: %s", r.method, r.path, y.body)
		}
		if r.method != "GET" || r.path == cmPath || r.path == wbase {
			continue // (a list's resourceVersion may move between two GETs)
		}
		// The same content as the JSON answer; and kube's formatting of
		// it (sigs.k8s.io/yaml, keys sorted) where nothing in it ages.
		jaccept := "application/json" + r.accept[len(contentYAML):]
		j := e.do(r.method, r.path, nil, "Accept", jaccept)
		var fromYAML, fromJSON any
		yj, err := sigsyaml.YAMLToJSON(y.body)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(yj, &fromYAML); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(j.body, &fromJSON); err != nil {
			t.Fatal(err)
		}
		if r.accept == contentYAML && !reflect.DeepEqual(fromYAML, fromJSON) {
			t.Fatalf("%s: YAML %s\nJSON %s", r.path, y.body, j.body)
		}
		if want, _ := sigsyaml.JSONToYAML(j.body); r.accept == contentYAML && string(want) != string(y.body) {
			t.Fatalf("%s: YAML\n%s\nwant\n%s", r.path, y.body, want)
		}
	}
	expectYAMLStatus(e, 406, "NotAcceptable", "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
		"GET", cmPath+"?watch=1", contentYAML)
	// Errors are negotiated without conversions: YAML asking for partial
	// metadata gets a JSON Status, as from kube.
	e.expectStatus(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)",
		"GET", cmPath+"/b", nil, "Accept", "application/yaml;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	// A refused patch type, before the handler: YAML too.
	expectYAMLStatus(e, 415, "UnsupportedMediaType", "415: Unsupported Media Type", "PATCH", cmPath+"/b", contentYAML, "Content-Type", "text/plain")
}

// expectYAMLStatus sends a request without a body whose answer must be a
// YAML Status with code, reason and message.
func expectYAMLStatus(e *env, code int, reason, msg, method, path, accept string, hdr ...string) {
	e.t.Helper()
	r := e.do(method, path, nil, append([]string{"Accept", accept}, hdr...)...)
	var st map[string]any
	j, err := sigsyaml.YAMLToJSON(r.body)
	if err == nil {
		err = json.Unmarshal(j, &st)
	}
	if r.code != code || r.hdr.Get("Content-Type") != contentYAML || err != nil ||
		st["kind"] != "Status" || st["reason"] != reason || st["message"] != msg {
		e.t.Fatalf("%s %s: %d %s %s, want a YAML Status %d %s %q", method, path, r.code, r.hdr.Get("Content-Type"), r.body, code, reason, msg)
	}
}
