package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// gadgetSchema exercises each rule a CRD schema can state.
const gadgetSchema = `{"type":"object","properties":{
 "spec":{"type":"object","required":["name"],
  "x-kubernetes-validations":[
   {"rule":"self.minReplicas <= self.maxReplicas","message":"minReplicas must not exceed maxReplicas"},
   {"rule":"self.name != 'forbidden'","messageExpression":"'the name ' + self.name + ' is reserved'"}],
  "properties":{
   "name":{"type":"string","minLength":2,"maxLength":10,"pattern":"^[a-z]+$"},
   "mode":{"type":"string","enum":["fast","slow"],"default":"fast"},
   "replicas":{"type":"integer","minimum":0,"maximum":10,"default":1},
   "minReplicas":{"type":"integer","default":0},
   "maxReplicas":{"type":"integer","default":5},
   "ratio":{"type":"number","multipleOf":0.5},
   "when":{"type":"string","format":"date-time"},
   "port":{"x-kubernetes-int-or-string":true},
   "note":{"type":"string","nullable":true},
   "tags":{"type":"array","items":{"type":"string","maxLength":20},"x-kubernetes-list-type":"set","maxItems":3},
   "ports":{"type":"array","maxItems":10,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
    "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string","maxLength":20},"port":{"type":"integer"}}}},
   "labels":{"type":"object","additionalProperties":{"type":"string"},"maxProperties":2},
   "extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
   "template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},
   "fixed":{"type":"string","maxLength":20,"x-kubernetes-validations":[{"rule":"self == oldSelf","message":"fixed is immutable"}]}}},
 "status":{"type":"object","properties":{"phase":{"type":"string","enum":["A","B"]}}}}}`

func gadgetCRD(t *testing.T, schema string, extra map[string]any) map[string]any {
	t.Helper()
	var s any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"name": "v1", "served": true, "storage": true,
		"subresources": map[string]any{"status": map[string]any{}},
		"schema":       map[string]any{"openAPIV3Schema": s},
		"additionalPrinterColumns": []any{
			map[string]any{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
			map[string]any{"name": "HTTP", "type": "integer", "jsonPath": `.spec.ports[?(@.name=="http")].port`},
		}}
	versions := []any{v}
	if extra != nil {
		versions = append(versions, extra)
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
			"versions": versions},
	}
}

const gadgets = "/apis/example.com/v1/namespaces/default/gadgets"

func gadget(name, spec string) string {
	return `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
}

func causesOf(m map[string]any) []string {
	var out []string
	d, _ := m["details"].(map[string]any)
	cs, _ := d["causes"].([]any)
	for _, c := range cs {
		cm := c.(map[string]any)
		out = append(out, cm["reason"].(string)+"|"+cm["field"].(string)+"|"+cm["message"].(string))
	}
	return out
}

const notChecked = "FieldValueInvalid|<nil>|Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"

// Each rule of a CRD schema refuses what it should with kube's 422, its
// field paths and messages (the texts are kube-apiserver v1.37's; see
// e2e TestCustomResourceSchemaLikeKube for the side-by-side run).
func TestCustomResourceSchemaValidation(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, gadgetCRD(t, gadgetSchema, nil))
	for _, tc := range []struct {
		name, spec string
		causes     []string
	}{
		{"type", `{"name":"abc","replicas":"two"}`, []string{`FieldValueTypeInvalid|spec.replicas|Invalid value: "string": spec.replicas in body must be of type integer: "string"`, notChecked}},
		{"enum", `{"name":"abc","mode":"medium"}`, []string{`FieldValueNotSupported|spec.mode|Unsupported value: "medium": supported values: "fast", "slow"`, notChecked}},
		{"minimum", `{"name":"abc","replicas":-1}`, []string{`FieldValueInvalid|spec.replicas|Invalid value: -1: spec.replicas in body should be greater than or equal to 0`}},
		{"maximum", `{"name":"abc","replicas":11,"maxReplicas":20}`, []string{`FieldValueInvalid|spec.replicas|Invalid value: 11: spec.replicas in body should be less than or equal to 10`}},
		{"pattern", `{"name":"ABC"}`, []string{`FieldValueInvalid|spec.name|Invalid value: "ABC": spec.name in body should match '^[a-z]+$'`}},
		{"minLength", `{"name":"a"}`, []string{`FieldValueInvalid|spec.name|Invalid value: "a": spec.name in body should be at least 2 chars long`}},
		{"maxLength", `{"name":"abcdefghijkl"}`, []string{`FieldValueTooLong|spec.name|Too long: may not be more than 10 bytes`, notChecked}},
		{"required", `{"mode":"slow"}`, []string{`FieldValueRequired|spec.name|Required value`, notChecked}},
		{"int-or-string", `{"name":"abc","port":true}`, []string{`FieldValueTypeInvalid|spec.port|Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`, notChecked}},
		{"multipleOf", `{"name":"abc","ratio":0.3}`, []string{`FieldValueInvalid|spec.ratio|Invalid value: 0.3: spec.ratio in body should be a multiple of 0.5`}},
		{"format", `{"name":"abc","when":"yesterday"}`, []string{`FieldValueTypeInvalid|spec.when|Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"`, notChecked}},
		{"set", `{"name":"abc","tags":["a","a"]}`, []string{`FieldValueDuplicate|spec.tags[1]|Duplicate value: "a"`}},
		{"map keys", `{"name":"abc","ports":[{"name":"h","port":1},{"name":"h","port":2}]}`, []string{`FieldValueDuplicate|spec.ports[1]|Duplicate value: {"name":"h"}`}},
		{"maxItems", `{"name":"abc","tags":["a","b","c","d"]}`, []string{`FieldValueTooMany|spec.tags|Too many: 4: must have at most 3 items`, notChecked}},
		{"maxProperties", `{"name":"abc","labels":{"a":"1","b":"2","c":"3"}}`, []string{`FieldValueTooMany|spec.labels|Too many: 3: must have at most 2 items`, notChecked}},
		{"embedded", `{"name":"abc","template":{"metadata":{"name":"t"}}}`, []string{`FieldValueRequired|spec.template.apiVersion|Required value`, `FieldValueRequired|spec.template.kind|Required value`, notChecked}},
		{"cel", `{"name":"abc","minReplicas":6}`, []string{`FieldValueInvalid|spec|Invalid value: minReplicas must not exceed maxReplicas`}},
		{"messageExpression", `{"name":"forbidden"}`, []string{`FieldValueInvalid|spec|Invalid value: the name forbidden is reserved`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := e.expectStatus(422, "Invalid", "", "POST", gadgets, gadget("x", tc.spec))
			if got := causesOf(m); !slices.Equal(got, tc.causes) {
				t.Fatalf("causes:\n%q\nwant\n%q", got, tc.causes)
			}
			if !strings.HasPrefix(m["message"].(string), `Gadget.example.com "x" is invalid: `) {
				t.Fatalf("message %q", m["message"])
			}
		})
	}
	// Nothing invalid was stored.
	if items := e.must(200, "GET", gadgets, nil)["items"].([]any); len(items) != 0 {
		t.Fatalf("stored: %v", items)
	}
}

// Unknown fields are pruned; fieldValidation decides between kube's 400
// (Strict), a Warning each (Warn, the default) and silence (Ignore).
// Defaults are applied, nulls the schema does not allow dropped.
func TestCustomResourceSchemaPruningAndDefaults(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, gadgetCRD(t, gadgetSchema, nil))
	body := gadget("a", `{"name":"abc","bogus":1,"extra":{"kept":true},"ports":[{"name":"x","bad":2}],"note":null,"ratio":null}`)
	e.expectStatus(400, "BadRequest", `Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: unknown field "spec.bogus", unknown field "spec.ports[0].bad"`,
		"POST", gadgets+"?fieldValidation=Strict", body)
	r := e.do("POST", gadgets, body)
	if r.code != 201 {
		t.Fatalf("warn: %d %s", r.code, r.body)
	}
	if w := warnings(r); !slices.Equal(w, []string{`299 - "unknown field \"spec.bogus\""`, `299 - "unknown field \"spec.ports[0].bad\""`}) {
		t.Fatalf("warnings %q", w)
	}
	spec, _ := json.Marshal(r.json(t)["spec"])
	const want = `{"extra":{"kept":true},"maxReplicas":5,"minReplicas":0,"mode":"fast","name":"abc","note":null,"ports":[{"name":"x"}],"replicas":1}`
	if string(spec) != want {
		t.Fatalf("stored spec %s, want %s", spec, want)
	}
	r = e.do("POST", gadgets+"?fieldValidation=Ignore", gadget("b", `{"name":"abc","bogus":1}`))
	if r.code != 201 || len(warnings(r)) != 0 || path(r.json(t), "spec", "bogus") != nil {
		t.Fatalf("ignore: %d %q %s", r.code, warnings(r), r.body)
	}
	// A merge patch removing a defaulted field gets the default back;
	// an unknown field in a patch under Strict is kube's 422 on "patch".
	got := e.must(200, "PATCH", gadgets+"/a", `{"spec":{"mode":null,"replicas":3}}`, "Content-Type", "application/merge-patch+json")
	if path(got, "spec", "mode") != "fast" || path(got, "spec", "replicas") != float64(3) {
		t.Fatalf("patched: %v", got["spec"])
	}
	m := e.expectStatus(422, "Invalid", "", "PATCH", gadgets+"/a?fieldValidation=Strict", `{"spec":{"bogus":1}}`, "Content-Type", "application/merge-patch+json")
	if msg := m["message"].(string); !strings.HasPrefix(msg, ` "" is invalid: patch: Invalid value: "{`) || !strings.HasSuffix(msg, `: strict decoding error: unknown field "spec.bogus"`) {
		t.Fatalf("patch strict: %q", msg)
	}
}

// Transition rules see the old object; /status writes validate status
// against its schema and cannot change spec.
func TestCustomResourceSchemaUpdates(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, gadgetCRD(t, gadgetSchema, nil))
	e.must(201, "POST", gadgets, gadget("f", `{"name":"full","fixed":"one"}`))
	merge := []string{"Content-Type", "application/merge-patch+json"}
	m := e.expectStatus(422, "Invalid", `Gadget.example.com "f" is invalid: spec.fixed: Invalid value: "two": fixed is immutable`,
		"PATCH", gadgets+"/f", `{"spec":{"fixed":"two"}}`, merge...)
	if c := causesOf(m); !slices.Equal(c, []string{`FieldValueInvalid|spec.fixed|Invalid value: "two": fixed is immutable`}) {
		t.Fatalf("causes %q", c)
	}
	e.expectStatus(422, "Invalid", `Gadget.example.com "f" is invalid: [status.phase: Unsupported value: "C": supported values: "A", "B", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
		"PATCH", gadgets+"/f/status", `{"status":{"phase":"C"}}`, merge...)
	got := e.must(200, "PATCH", gadgets+"/f/status", `{"spec":{"replicas":99},"status":{"phase":"B","bogus":1}}`, merge...)
	if path(got, "spec", "replicas") != float64(1) || path(got, "status", "bogus") != nil || path(got, "status", "phase") != "B" {
		t.Fatalf("status write: %v", got)
	}
	e.expectStatus(422, "Invalid", `Gadget.example.com "f" is invalid: spec.replicas: Invalid value: 12: spec.replicas in body should be less than or equal to 10`,
		"PATCH", gadgets+"/f", `{"spec":{"replicas":12}}`, merge...)
}

// A default added to the schema shows on objects stored before it, on
// GET, LIST and WATCH, as kube's storage decoder applies it; the stored
// bytes do not change.
func TestCustomResourceSchemaDefaultsOnRead(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, gadgetCRD(t, gadgetSchema, nil))
	e.must(201, "POST", gadgets, gadget("a", `{"name":"abc"}`))
	// As written by the controllers' status updates after the create.
	crd := e.must(200, "GET", crdPath+"/gadgets.example.com", nil)
	spec := path(crd, "spec", "versions").([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
	spec["properties"].(map[string]any)["added"] = map[string]any{"type": "string", "default": "yes"}
	e.must(200, "PUT", crdPath+"/gadgets.example.com", crd)
	got := e.must(200, "GET", gadgets+"/a", nil)
	if path(got, "spec", "added") != "yes" {
		t.Fatalf("get: %v", got["spec"])
	}
	items := e.must(200, "GET", gadgets, nil)["items"].([]any)
	if len(items) != 1 || path(items[0].(map[string]any), "spec", "added") != "yes" {
		t.Fatalf("list: %v", items)
	}
	w := e.watch(gadgets + "?watch=1")
	ev := w.expect("ADDED", "a")
	if path(ev.Object, "spec", "added") != "yes" {
		t.Fatalf("watch: %v", ev.Object)
	}
	kv, err := e.store.Get(t.Context(), "/registry/example.com/gadgets/default/a")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(kv.Value), "added") {
		t.Fatalf("stored object changed by a read: %s", kv.Value)
	}
}

// Deprecated versions warn on every request, with kube's default text or
// the CRD's deprecationWarning; printer columns take kube's full JSONPath.
func TestCustomResourceSchemaDeprecationAndColumns(t *testing.T) {
	e := newEnv(t)
	var s any
	_ = json.Unmarshal([]byte(gadgetSchema), &s)
	beta := map[string]any{"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
		"schema": map[string]any{"openAPIV3Schema": s}}
	e.must(201, "POST", crdPath, gadgetCRD(t, gadgetSchema, beta))
	e.must(201, "POST", gadgets, gadget("a", `{"name":"abc","ports":[{"name":"grpc","port":9},{"name":"http","port":80}]}`))
	r := e.do("GET", "/apis/example.com/v1beta1/namespaces/default/gadgets/a", nil)
	if w := warnings(r); r.code != 200 || !slices.Equal(w, []string{`299 - "example.com/v1beta1 Gadget is deprecated; use example.com/v1 Gadget"`}) {
		t.Fatalf("v1beta1: %d %q", r.code, w)
	}
	if r := e.do("GET", gadgets+"/a", nil); len(warnings(r)) != 0 {
		t.Fatalf("v1 warned: %q", warnings(r))
	}
	tbl := e.must(200, "GET", gadgets, nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var names []string
	for _, c := range tbl["columnDefinitions"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string)+":"+c.(map[string]any)["type"].(string))
	}
	if !slices.Equal(names, []string{"Name:string", "Replicas:integer", "HTTP:integer"}) {
		t.Fatalf("columns %v", names)
	}
	cells := tbl["rows"].([]any)[0].(map[string]any)["cells"].([]any)
	if len(cells) != 3 || cells[0] != "a" || cells[1] != float64(1) || cells[2] != float64(80) {
		t.Fatalf("cells %v", cells)
	}
}

// kube's CRD strategy already refuses schemas that are not structural.
func TestCRDNonStructuralSchemaRefused(t *testing.T) {
	e := newEnv(t)
	m := e.expectStatus(422, "Invalid", "", "POST", crdPath, gadgetCRD(t, `{"type":"object","properties":{"spec":{"properties":{"a":{"type":"string"}}}}}`, nil))
	if c := causesOf(m); !slices.Equal(c, []string{"FieldValueRequired|spec.validation.openAPIV3Schema.properties[spec].type|Required value: must not be empty for specified object fields"}) {
		t.Fatalf("causes %q", c)
	}
}

// A body naming another version of the group is coerced by that
// version's schema, as kube's decoder coerces it (by the version its
// apiVersion names, served or not; a version the CRD does not have keeps
// nothing but apiVersion, kind and metadata; another group is left
// alone): its unknown fields are warnings (a 400 naming that version
// under Strict) before the handler refuses the version, a patch's before
// the validator does, and a status patch naming v2 gets v2's defaults.
func TestCustomResourceOtherVersionCoercedByItsSchema(t *testing.T) {
	e := newEnv(t)
	version := func(name string, served, storage bool, spec, status string) map[string]any {
		var s any
		if err := json.Unmarshal([]byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{`+spec+
			`}},"status":{"type":"object","properties":{`+status+`}}}}`), &s); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"name": name, "served": served, "storage": storage,
			"subresources": map[string]any{"status": map[string]any{}},
			"schema":       map[string]any{"openAPIV3Schema": s}}
	}
	crd := gadgetCRD(t, gadgetSchema, nil)
	crd["spec"].(map[string]any)["versions"] = []any{
		version("v1", true, true, `"a":{"type":"integer"},"b":{"type":"string"}`, `"ready":{"type":"boolean"},"phase":{"type":"string"}`),
		version("v2", true, false, `"a":{"type":"integer"},"c":{"type":"string","default":"dc"}`, `"ready":{"type":"boolean"},"phase":{"type":"string","default":"P"}`),
		version("v3", false, false, `"b":{"type":"string"}`, `"ready":{"type":"boolean"}`),
	}
	e.must(201, "POST", crdPath, crd)
	body := func(apiVersion, name string) string {
		return `{"apiVersion":"` + apiVersion + `","kind":"Gadget","metadata":{"name":"` + name + `"},"spec":{"a":1,"b":"x","c":"y"}}`
	}
	e.must(201, "POST", gadgets, `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"a":1,"b":"x"}}`)
	mismatch := func(v string) string {
		return "the API version in the data (" + v + ") does not match the expected API version (example.com/v1)"
	}
	unknown := func(paths ...string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, `299 - "unknown field \"`+p+`\""`)
		}
		return out
	}
	for _, c := range []struct {
		method, path, apiVersion string
		warnings                 []string
	}{
		{"POST", gadgets, "example.com/v2", unknown("spec.b")},
		{"POST", gadgets + "?dryRun=All", "example.com/v2", unknown("spec.b")},
		{"POST", gadgets + "?fieldValidation=Warn", "example.com/v3", unknown("spec.a", "spec.c")},
		{"POST", gadgets, "example.com/v9", unknown("spec")},
		{"POST", gadgets, "other.example.com/v2", nil},
		{"PUT", gadgets + "/g", "example.com/v2", unknown("spec.b")},
		{"PUT", gadgets + "/g/status", "example.com/v9", unknown("spec")},
		{"POST", gadgets + "?fieldValidation=Ignore", "example.com/v2", nil},
	} {
		name := "n"
		if c.method == "PUT" {
			name = "g"
		}
		r := e.do(c.method, c.path, body(c.apiVersion, name))
		if r.code != 400 || !strings.Contains(string(r.body), mismatch(c.apiVersion)) || !slices.Equal(warnings(r), c.warnings) {
			t.Errorf("%s %s of %s: %d %q %s, want 400 %q", c.method, c.path, c.apiVersion, r.code, warnings(r), r.body, c.warnings)
		}
	}
	e.expectStatus(400, "BadRequest", `Gadget in version "v2" cannot be handled as a Gadget: strict decoding error: unknown field "spec.b"`,
		"POST", gadgets+"?fieldValidation=Strict", body("example.com/v2", "n"))
	e.expectStatus(400, "BadRequest", mismatch("other.example.com/v2"),
		"POST", gadgets+"?fieldValidation=Strict", body("other.example.com/v2", "n"))
	// A body the decoder cannot read is that error alone, even unchecked.
	e.expectStatus(400, "BadRequest", `Gadget in version "v2" cannot be handled as a Gadget: json: cannot unmarshal bool into Go struct field ObjectMeta.name of type string`,
		"POST", gadgets+"?fieldValidation=Ignore", `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":false},"spec":{"b":"x"}}`)
	// A body for v2 sent to v2 is v2's: c is known, b is not.
	r := e.do("POST", "/apis/example.com/v2/namespaces/default/gadgets", body("example.com/v1", "n"))
	if r.code != 400 || !slices.Equal(warnings(r), unknown("spec.c")) {
		t.Errorf("v1 body to v2: %d %q %s", r.code, warnings(r), r.body)
	}

	merge := []string{"Content-Type", "application/merge-patch+json"}
	r = e.do("PATCH", gadgets+"/g", `{"apiVersion":"example.com/v2"}`, merge...)
	if r.code != 422 || !strings.Contains(string(r.body), `apiVersion: Invalid value: \"example.com/v2\": must be example.com/v1`) || !slices.Equal(warnings(r), unknown("spec.b")) {
		t.Errorf("patch to v2: %d %q %s", r.code, warnings(r), r.body)
	}
	m := e.expectStatus(422, "Invalid", "", "PATCH", gadgets+"/g?fieldValidation=Strict", `{"apiVersion":"example.com/v9"}`, merge...)
	if msg := m["message"].(string); !strings.HasSuffix(msg, `strict decoding error: unknown field "spec"`) {
		t.Errorf("patch to v9 under Strict: %q", msg)
	}
	// The status strategy keeps the stored object, v1, with the status
	// decoded as v2: its default is set, its unknown spec field warned of.
	r = e.do("PATCH", gadgets+"/g/status", `{"apiVersion":"example.com/v2","status":{"ready":true}}`, merge...)
	if r.code != 200 || !slices.Equal(warnings(r), unknown("spec.b")) {
		t.Fatalf("status patch naming v2: %d %q %s", r.code, warnings(r), r.body)
	}
	got := e.must(200, "GET", gadgets+"/g", nil)
	if got["apiVersion"] != "example.com/v1" || path(got, "status", "phase") != "P" || path(got, "spec", "b") != "x" || path(got, "spec", "c") != nil {
		t.Errorf("after the status patch: %v", got)
	}
}

// Under conversion None, a write through another version than the
// storage version is stored relabelled to the storage version and pruned
// by its schema, and an object read through another version than the one
// stored is defaulted by the stored version's schema and then pruned by
// the read version's, as kube's storage codec does: the answer, a GET, a
// LIST and a watch through each version all show that.
func TestCustomResourceStoredInStorageVersion(t *testing.T) {
	e := newEnv(t)
	version := func(name string, storage bool, spec string) map[string]any {
		var s any
		if err := json.Unmarshal([]byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{`+spec+
			`}},"status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}`), &s); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"name": name, "served": true, "storage": storage,
			"subresources": map[string]any{"status": map[string]any{}},
			"schema":       map[string]any{"openAPIV3Schema": s}}
	}
	crd := gadgetCRD(t, gadgetSchema, nil)
	crd["spec"].(map[string]any)["versions"] = []any{
		version("v1", true, `"a":{"type":"integer"},"b":{"type":"string"},"e":{"type":"string","default":"e1"}`),
		version("v2", false, `"a":{"type":"integer"},"c":{"type":"string","default":"dc"},"e":{"type":"string"}`),
	}
	e.must(201, "POST", crdPath, crd)
	v2 := "/apis/example.com/v2/namespaces/default/gadgets"
	rv := e.must(200, "GET", gadgets, nil)["metadata"].(map[string]any)["resourceVersion"].(string)
	w1 := e.watch(gadgets + "?watch=1&resourceVersion=" + rv)
	w2 := e.watch(v2 + "?watch=1&resourceVersion=" + rv)

	// spec as v1 reads it and as v2 does.
	const atV1, atV2 = `{"a":1,"e":"e1"}`, `{"a":1,"e":"e1"}`
	specOf := func(m map[string]any) string {
		b, _ := json.Marshal(m["spec"])
		return string(b)
	}
	check := func(what string, m map[string]any, apiVersion, want string) {
		t.Helper()
		if m["apiVersion"] != apiVersion || specOf(m) != want {
			t.Errorf("%s: %v %s, want %s %s", what, m["apiVersion"], specOf(m), apiVersion, want)
		}
	}
	// Written through v2: c is v2's only (pruned as stored), e is v1's
	// default (set as read from v1), v2's default of c does not show.
	check("create at v2", e.must(201, "POST", v2, `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"g"},"spec":{"a":1,"c":"y"}}`), "example.com/v2", atV2)
	check("dry-run create at v2", e.must(201, "POST", v2+"?dryRun=All", `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"d"},"spec":{"a":1}}`), "example.com/v2", atV2)
	check("get at v1", e.must(200, "GET", gadgets+"/g", nil), "example.com/v1", atV1)
	check("get at v2", e.must(200, "GET", v2+"/g", nil), "example.com/v2", atV2)
	check("list at v2", e.must(200, "GET", v2, nil)["items"].([]any)[0].(map[string]any), "example.com/v2", atV2)
	check("patch at v2", e.must(200, "PATCH", v2+"/g", `{"spec":{"c":"z"}}`, "Content-Type", "application/merge-patch+json"), "example.com/v2", atV2)
	// Written through v1 with b: v2 reads it without b.
	check("patch at v1", e.must(200, "PATCH", gadgets+"/g", `{"spec":{"b":"x"}}`, "Content-Type", "application/merge-patch+json"), "example.com/v1", `{"a":1,"b":"x","e":"e1"}`)
	check("get at v2 after", e.must(200, "GET", v2+"/g", nil), "example.com/v2", atV2)
	check("status patch at v2", e.must(200, "PATCH", v2+"/g/status", `{"status":{"ready":true}}`, "Content-Type", "application/merge-patch+json"), "example.com/v2", atV2)
	// kube's status strategy keeps the stored object as v2 reads it: b
	// is gone.
	check("get at v1 after", e.must(200, "GET", gadgets+"/g", nil), "example.com/v1", atV1)

	for i, want := range []string{atV1, atV1, `{"a":1,"b":"x","e":"e1"}`, atV1} {
		ev := w1.expect([]string{"ADDED", "MODIFIED", "MODIFIED", "MODIFIED"}[i], "g")
		check("v1 watch event "+ev.Type, ev.Object, "example.com/v1", want)
	}
	for i := range 4 {
		ev := w2.expect([]string{"ADDED", "MODIFIED", "MODIFIED", "MODIFIED"}[i], "g")
		check("v2 watch event "+ev.Type, ev.Object, "example.com/v2", atV2)
	}
}
