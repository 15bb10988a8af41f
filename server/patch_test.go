package server

import (
	"strings"
	"testing"
)

// TestPatchWithoutTypeMeta: a JSON or merge patch that removes apiVersion
// or kind gets kube's answers. A built-in object without apiVersion
// decodes as kube's decoder decodes it, into the internal Go type, which
// knows none of its members but kind (each unknown, per fieldValidation),
// so it has no name: 400. A custom resource's result is decoded by the
// unstructured decoder, which needs a kind and string type fields (422
// Invalid "patch"), and one without apiVersion is refused by the store
// that cannot type it (500), after the name and resourceVersion checks.
// A strategic merge patch keeps both.
func TestPatchWithoutTypeMeta(t *testing.T) {
	e := newEnv(t)
	cms := "/api/v1/namespaces/default/configmaps"
	e.must(201, "POST", cms, cm("cm", nil, map[string]string{"a": "1"}))
	patch := func(code int, path, ctype, body string) response {
		t.Helper()
		r := e.do("PATCH", path, body, "Content-Type", ctype)
		if r.code != code {
			t.Fatalf("PATCH %s %s: %d %s, want %d", path, body, r.code, r.body, code)
		}
		return r
	}
	const merge, jsonp, smp = "application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"
	r := patch(400, cms+"/cm", merge, `{"apiVersion":null}`)
	if msg := r.json(t)["message"]; msg != "the name of the object (cm based on URL) was undeterminable: name must be provided" {
		t.Errorf("built-in without apiVersion: %v", msg)
	}
	if w := r.hdr.Values("Warning"); strings.Join(w, "|") != `299 - "unknown field \"data\""|299 - "unknown field \"metadata\""` {
		t.Errorf("built-in without apiVersion: warnings %q", w)
	}
	r = patch(422, cms+"/cm?fieldValidation=Strict", jsonp, `[{"op":"remove","path":"/apiVersion"}]`)
	if msg, _ := r.json(t)["message"].(string); !strings.HasPrefix(msg, ` "" is invalid: patch: Invalid value: "{`) ||
		!strings.HasSuffix(msg, `strict decoding error: unknown field "data", unknown field "metadata"`) {
		t.Errorf("built-in without apiVersion, Strict: %s", msg)
	}
	patch(200, cms+"/cm", merge, `{"kind":null}`)
	patch(200, cms+"/cm", smp, `{"apiVersion":null,"kind":null}`)

	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	ws := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", ws, widget("w", "v1"))
	for _, tc := range []struct {
		code         int
		ctype, body  string
		start, inMsg string
	}{
		{422, merge, `{"kind":null}`, ` "" is invalid: patch: Invalid value: "{`, `": Object 'Kind' is missing in '{"apiVersion":"example.com/v1","metadata":`},
		{422, jsonp, `[{"op":"remove","path":"/kind"}]`, ` "" is invalid: patch: Invalid value: "{`, `Object 'Kind' is missing in '{`},
		{422, merge, `{"kind":5}`, ` "" is invalid: patch: Invalid value: "{`, `": couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string`},
		{500, merge, `{"apiVersion":null}`, `Internal error occurred: Object 'apiVersion' is missing in 'object has no apiVersion field'`, ""},
		{500, jsonp, `[{"op":"remove","path":"/apiVersion"}]`, `Internal error occurred: Object 'apiVersion' is missing in 'object has no apiVersion field'`, ""},
		{500, merge, `{"apiVersion":null,"metadata":{"uid":"x"}}`, `Internal error occurred: Object 'apiVersion' is missing`, ""},
		{400, merge, `{"apiVersion":null,"metadata":{"name":"other"}}`, `the name of the object (other) does not match the name on the URL (w)`, ""},
		{409, merge, `{"apiVersion":null,"metadata":{"resourceVersion":"1"}}`, `Operation cannot be fulfilled on widgets.example.com "w": the object has been modified`, ""},
	} {
		msg, _ := patch(tc.code, ws+"/w", tc.ctype, tc.body).json(t)["message"].(string)
		if !strings.HasPrefix(msg, tc.start) || !strings.Contains(msg, tc.inMsg) {
			t.Errorf("%s: message %s", tc.body, msg)
		}
	}
	if got := e.must(200, "GET", ws+"/w", nil); got["apiVersion"] != "example.com/v1" || got["kind"] != "Widget" {
		t.Errorf("stored: %v", got)
	}
}

// TestPatchOtherTypeMeta: a patch that gives a custom resource another
// apiVersion is refused by kube's custom resource validator (422, named by
// the patched group), and a strategic merge patch that changes a built-in
// object's apiVersion or kind changes nothing (kube converts the result
// to its internal type); a merge patch doing so is the decoder's 422
// "patch", as an apiVersion of a custom resource that does not parse.
func TestPatchOtherTypeMeta(t *testing.T) {
	e := newEnv(t)
	cms := "/api/v1/namespaces/default/configmaps"
	e.must(201, "POST", cms, cm("cm", nil, map[string]string{"a": "1"}))
	const merge, smp = "application/merge-patch+json", "application/strategic-merge-patch+json"
	for _, body := range []string{`{"apiVersion":"v2","data":{"b":"2"}}`, `{"kind":"Secret"}`} {
		if r := e.do("PATCH", cms+"/cm", body, "Content-Type", smp); r.code != 200 || r.json(t)["apiVersion"] != "v1" || r.json(t)["kind"] != "ConfigMap" {
			t.Errorf("strategic %s: %d %s", body, r.code, r.body)
		}
	}
	if r := e.do("PATCH", cms+"/cm", `{"apiVersion":"v2"}`, "Content-Type", merge); r.code != 422 || !strings.Contains(string(r.body), `no kind \"ConfigMap\" is registered for version \"v2\"`) {
		t.Errorf("merge apiVersion v2: %d %s", r.code, r.body)
	}
	if got := e.must(200, "GET", cms+"/cm", nil); got["data"].(map[string]any)["b"] != "2" {
		t.Errorf("stored: %v", got)
	}

	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	ws := "/apis/example.com/v1/namespaces/default/widgets"
	e.must(201, "POST", ws, widget("w", "v1"))
	for _, tc := range []struct{ body, msg string }{
		{`{"apiVersion":"other.example.com/v1"}`, `Widget.other.example.com "w" is invalid: apiVersion: Invalid value: "other.example.com/v1": must be example.com/v1`},
		{`{"apiVersion":"v1"}`, `Widget "w" is invalid: apiVersion: Invalid value: "v1": must be example.com/v1`},
		{`{"apiVersion":"a/b/c"}`, ` "" is invalid: patch: Invalid value: "{`},
	} {
		r := e.do("PATCH", ws+"/w", tc.body, "Content-Type", merge)
		if msg, _ := r.json(t)["message"].(string); r.code != 422 || !strings.HasPrefix(msg, tc.msg) {
			t.Errorf("%s: %d %s, want 422 %q", tc.body, r.code, msg, tc.msg)
		}
	}
	if got := e.must(200, "GET", ws+"/w", nil); got["apiVersion"] != "example.com/v1" {
		t.Errorf("stored: %v", got)
	}
}
