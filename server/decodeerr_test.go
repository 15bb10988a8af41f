package server

import "testing"

// TestBodyErrorsAsKube: bodies of a built-in kind that do not decode, and
// updates kube refuses before storage, get kube-apiserver v1.37.2's
// answers (its messages, as it gave them for the same requests).
func TestBodyErrorsAsKube(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ body, msg string }{
		{"", "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)"},
		{"{", "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({)"},
		{"[]", `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (5b5d)`},
		{"xyz", "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'x' looking for beginning of value (78797a)"},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a5"},"data":{"k":"v"},"extra":[1,2,3,4,5,6]`, `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)`},
		{`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`, `Pod in version "v1" cannot be handled as a ConfigMap: converting (v1.Pod) to (core.ConfigMap): unknown conversion`},
		{`{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"a"}}`, `ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2" in scheme "pkg/runtime/scheme.go:111"`},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a5"},"data":{"k":1}}`, `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string`},
	} {
		e.expectStatus(400, "BadRequest", c.msg, "POST", cmPath, c.body)
	}
	// YAML bodies are read as the JSON they convert to; "y" is YAML's true.
	e.must(201, "POST", cmPath, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yaml}\ndata: {a: \"1\"}\n", "Content-Type", "application/yaml")
	e.expectStatus(400, "BadRequest", `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string`,
		"POST", cmPath, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {a: 1}\n", "Content-Type", "application/yaml")
	e.expectStatus(400, "BadRequest", "the object provided is unrecognized (must be of type ConfigMap): yaml: did not find expected key (3a203a)",
		"POST", cmPath, ": :", "Content-Type", "application/yaml")
	e.expectStatus(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
		"POST", cmPath, "{}", "Content-Type", "text/plain")
	// null is an empty object to kube's decoder: a ConfigMap without a name.
	m := e.expectStatus(422, "Invalid", "", "POST", cmPath, "null")
	if causes := m["details"].(map[string]any)["causes"].([]any); len(causes) != 1 || causes[0].(map[string]any)["field"] != "metadata.name" {
		t.Fatalf("null: %v", m)
	}
	created := e.must(201, "POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pt"}}`)
	uid := created["metadata"].(map[string]any)["uid"].(string)
	e.expectStatus(400, "BadRequest", "the name of the object (pt based on URL) was undeterminable: name must be provided",
		"PUT", cmPath+"/pt", `{"apiVersion":"v1","kind":"ConfigMap"}`)
	// kube's storage error names the etcd key; in a dry run, checked
	// above its storage layer, the key without the "/registry" prefix.
	e.expectStatus(409, "Conflict", `Operation cannot be fulfilled on configmaps "pt": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/pt, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: abc, UID in object meta: `+uid,
		"PUT", cmPath+"/pt", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pt","uid":"abc"}}`)
	e.expectStatus(409, "Conflict", `Operation cannot be fulfilled on configmaps "pt": StorageError: invalid object, Code: 4, Key: /configmaps/default/pt, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: abc, UID in object meta: `+uid,
		"PUT", cmPath+"/pt?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pt","uid":"abc"}}`)
	e.must(200, "PUT", cmPath+"/pt", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pt","uid":"`+uid+`"},"data":{"k":"v"}}`)

	// DeleteOptions come from the body if there is one, else the query,
	// decoded and validated as kube does.
	e.expectStatus(400, "BadRequest", `no kind "Pod" is registered for version "meta.k8s.io/v1" in scheme "pkg/runtime/scheme.go:111"`,
		"DELETE", cmPath+"/pt", `{"kind":"Pod"}`)
	e.expectStatus(400, "BadRequest", `strconv.ParseInt: parsing "abc": invalid syntax`, "DELETE", cmPath+"/pt?gracePeriodSeconds=abc", nil)
	e.expectStatus(422, "Invalid", `DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`,
		"DELETE", cmPath+"/pt?dryRun=x", nil)
	e.must(200, "GET", cmPath+"/pt", nil)

	// A write's options are kube's Create/Update/PatchOptions: one 422
	// naming every bad one; a dry run other than "All" writes nothing.
	e.expectStatus(422, "Invalid", `CreateOptions.meta.k8s.io "" is invalid: [fieldManager: Invalid value: "\x01": invalid character U+0001 (at position 0), dryRun: Unsupported value: [""]: supported values: "All", fieldValidation: Unsupported value: "q": supported values: "", "Ignore", "Strict", "Warn"]`,
		"POST", cmPath+"?dryRun=&fieldManager=%01&fieldValidation=q", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"opts"}}`)
	e.expectStatus(422, "Invalid", `UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`,
		"PUT", cmPath+"/pt?dryRun=x", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pt"},"data":{"k":"changed"}}`)
	e.expectStatus(422, "Invalid", `PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`,
		"PATCH", cmPath+"/pt?dryRun=x", `{"data":{"k":"changed"}}`, "Content-Type", "application/merge-patch+json")
	e.expectStatus(404, "NotFound", "", "GET", cmPath+"/opts", nil)
	if got := e.must(200, "GET", cmPath+"/pt", nil); got["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("a refused write changed the object: %v", got)
	}

	// Custom resources: kube's decoding of unstructured bodies.
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	wbase := "/apis/example.com/v1/namespaces/default/widgets"
	for _, c := range []struct{ body, msg string }{
		{"null", "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in 'null' (6e756c6c)"},
		{`{"metadata":{"name":"a"}}`, `the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{"metadata":{"name":"a"}}' ({"metadata":{"name":"a"}})`},
		{`{"kind":"Widget","metadata":{"name":"a"}}`, "the API version in the data () does not match the expected API version (example.com/v1)"},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":1}}`, `Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string`},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":"x"}`, `Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal string into Go value of type v1.ObjectMeta`},
	} {
		e.expectStatus(400, "BadRequest", c.msg, "POST", wbase, c.body)
	}
	// Their metadata rules are kube's validation's.
	e.expectStatus(422, "Invalid", `Widget.example.com "a" is invalid: metadata.labels: Invalid value: "b c": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		"POST", wbase, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","labels":{"a":"b c"}}}`)
}
