package server

import "testing"

// TestNegotiationAsKube: kube-apiserver's answers (v1.37.2, compared by
// e2e.TestKubeNegotiationSameAsOurs) to Accept headers it refuses.
func TestNegotiationAsKube(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`)
	router := "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	// kube's router wants a media type it produces, or */*, exactly.
	for _, accept := range []string{"text/html", "application/*", "text/html, application/*;q=0.5"} {
		m := e.expectStatus(406, "NotAcceptable", router, "GET", cmPath+"/b", nil, "Accept", accept)
		if d, ok := m["details"].(map[string]any); !ok || len(d) != 0 {
			t.Errorf("%s: details %v, want {}", accept, m["details"])
		}
	}
	e.expectStatus(406, "NotAcceptable", router+", application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
		"GET", cmPath, nil, "Accept", "text/html")
	e.must(200, "GET", cmPath+"/b", nil, "Accept", "text/html, application/json")
	// Then its negotiation, before anything is read or written: the
	// create is refused, and a missing object is a 406, not a 404.
	negotiation := "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	bogus := "application/json;as=Bogus;g=meta.k8s.io;v=v1"
	e.expectStatus(406, "NotAcceptable", negotiation, "POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"refused"}}`, "Accept", bogus)
	e.expectStatus(404, "NotFound", "", "GET", cmPath+"/refused", nil)
	e.expectStatus(406, "NotAcceptable", negotiation, "DELETE", cmPath+"/nope", nil, "Accept", bogus)
	// A patch's Content-Type is the router's first check.
	e.expectStatus(415, "UnsupportedMediaType", "415: Unsupported Media Type", "PATCH", cmPath+"/b", "x", "Accept", "text/html", "Content-Type", "text/plain")
	// Partial metadata of the wrong shape, checked once the answer is
	// there: kube names its internal types.
	e.expectStatus(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)",
		"GET", cmPath+"/b", nil, "Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	e.expectStatus(406, "NotAcceptable", "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)",
		"GET", cmPath, nil, "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	e.expectStatus(404, "NotFound", "", "GET", cmPath+"/nope", nil, "Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	// A watch is negotiated as any answer, then as a stream, which YAML
	// cannot be.
	e.expectStatus(406, "NotAcceptable", negotiation, "GET", cmPath+"?watch=1", nil, "Accept", bogus)
	for _, accept := range []string{"application/yaml", "application/yaml, application/json", "application/yaml;as=Table;g=meta.k8s.io;v=v1"} {
		msg := "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
		if accept == "application/yaml;as=Table;g=meta.k8s.io;v=v1" {
			// An error is never a Table: a JSON Status.
			e.expectStatus(406, "NotAcceptable", msg, "GET", cmPath+"?watch=1", nil, "Accept", accept)
			continue
		}
		expectYAMLStatus(e, 406, "NotAcceptable", msg, "GET", cmPath+"?watch=1", accept) // the Status in YAML
	}
	// That comes after the watch's options are read, and its Table's: a
	// bad one is a 400.
	expectYAMLStatus(e, 400, "BadRequest", "found '==', expected: !, identifier, or 'end of string'", "GET", cmPath+"?watch=1&labelSelector=%3D%3D", "application/yaml")
	expectYAMLStatus(e, 400, "BadRequest", `strconv.ParseInt: parsing "abc": invalid syntax`, "GET", "/api/v1/watch/namespaces/default/configmaps?limit=abc", "application/yaml")
	e.expectStatus(400, "BadRequest", `Unable to convert to Table as requested: includeObject: Invalid value: "x": must be 'Metadata', 'Object', 'None', or empty`,
		"GET", cmPath+"?watch=1&includeObject=x", nil, "Accept", "application/yaml;as=Table;g=meta.k8s.io;v=v1")
	// YAML is no stream: asked for as one, it is refused even where no
	// stream is sent, and its Status is JSON; JSON's and protobuf's are
	// served as their plain types.
	for _, p := range []string{cmPath, cmPath + "/b", cmPath + "/nope"} {
		e.expectStatus(406, "NotAcceptable", negotiation, "GET", p, nil, "Accept", "application/yaml;stream=watch")
		for accept, ct := range map[string]string{"application/json;stream=watch": mediaJSON, mediaProto + ";stream=watch": mediaProto} {
			want := 200
			if p == cmPath+"/nope" {
				want = 404
			}
			if r := e.do("GET", p, nil, "Accept", accept); r.code != want || r.hdr.Get("Content-Type") != ct {
				t.Errorf("GET %s [%s]: %d %s", p, accept, r.code, r.hdr.Get("Content-Type"))
			}
		}
	}
	// Not a watch, YAML is served (TestYAMLResponses).
	if r := e.do("GET", cmPath+"/b", nil, "Accept", "application/yaml, application/json"); r.code != 200 || r.hdr.Get("Content-Type") != contentYAML {
		t.Errorf("YAML: %d %s", r.code, r.hdr.Get("Content-Type"))
	}

	// Custom resources are not behind the router: application/* is JSON;
	// their 406s name the same types, and their Status can be protobuf.
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	wbase := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", wbase, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`)
	e.must(200, "GET", wbase+"/w", nil, "Accept", "application/*")
	e.expectStatus(406, "NotAcceptable", negotiation, "GET", wbase+"/w", nil, "Accept", "text/html")
	if r := e.do("GET", wbase+"/nope", nil, "Accept", "application/vnd.kubernetes.protobuf, application/json"); r.code != 404 || r.hdr.Get("Content-Type") != mediaProto {
		t.Errorf("custom resource's 404 for protobuf: %d %s", r.code, r.hdr.Get("Content-Type"))
	}
	m := e.must(500, "GET", wbase+"/w", nil, "Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	if m["message"] != "content is not a list" || m["reason"] != nil {
		t.Errorf("custom resource as a partial list: %v", m)
	}
	e.expectStatus(406, "NotAcceptable", "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)",
		"GET", wbase, nil, "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
}
