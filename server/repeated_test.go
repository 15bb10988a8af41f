package server

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRepeatedTopLevelKeys: a body repeating a top-level key is reported
// as kube reports it (a Warning, or a 400 under Strict) and decoded as
// kube decodes it: a built-in kind's occurrences of an object merge, a
// custom resource keeps the last (checked against kube-apiserver v1.37.2).
func TestRepeatedTopLevelKeys(t *testing.T) {
	e := newEnv(t)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"},"data":{"a":"1"},"data":{"b":"2"},"metadata":{"labels":{"l":"v"}}}`
	named := func(n string) string { return strings.ReplaceAll(body, "NAME", n) }
	r := e.do("POST", cmPath, named("warn"))
	if r.code != 201 || !slices.Equal(r.hdr.Values("Warning"), []string{`299 - "duplicate field \"data\""`, `299 - "duplicate field \"metadata\""`}) {
		t.Fatalf("warn: %d %v %s", r.code, r.hdr.Values("Warning"), r.body)
	}
	got := e.must(200, "GET", cmPath+"/warn", nil)
	if d := got["data"].(map[string]any); len(d) != 2 || d["a"] != "1" || d["b"] != "2" || path(got, "metadata", "labels", "l") != "v" || path(got, "metadata", "name") != "warn" {
		t.Fatalf("merged: %v", got)
	}
	e.expectStatus(400, "BadRequest", `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data", duplicate field "metadata"`,
		"POST", cmPath+"?fieldValidation=Strict", named("strict"))
	if r := e.do("POST", cmPath+"?fieldValidation=Ignore", named("ignore")); r.code != 201 || len(r.hdr.Values("Warning")) != 0 {
		t.Fatalf("ignore: %d %v", r.code, r.hdr.Values("Warning"))
	}

	e.must(201, "POST", crdPath, crdDef("widgets", "Widget", "Namespaced"))
	wpath := "/apis/example.com/v1/namespaces/default/widgets"
	r = e.do("POST", wpath, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"a":1},"spec":{"b":2}}`)
	if r.code != 201 || !slices.Equal(r.hdr.Values("Warning"), []string{`299 - "duplicate field \"spec\""`}) {
		t.Fatalf("custom resource: %d %v %s", r.code, r.hdr.Values("Warning"), r.body)
	}
	var w map[string]any
	if err := json.Unmarshal(r.body, &w); err != nil || len(w["spec"].(map[string]any)) != 1 || path(w, "spec", "b") != float64(2) {
		t.Fatalf("custom resource keeps the last: %v %s", err, r.body)
	}
}

// FuzzSplitObject: on any valid JSON (its invalid UTF-8 replaced, as
// decodeDoc does first), splitObject finds the members encoding/json's
// tokenizer finds, with the same keys and value bytes, and values cannot
// be appended into the input; splitDoc refuses what is not valid JSON; and
// mergeAll of three values is what merging them two at a time gives.
func FuzzSplitObject(f *testing.F) {
	f.Add([]byte(`{"a":1,"a":{"b":":"},"c":"\"{:","\u0041":[ 1 , {"x":"]\\"} ] }`), []byte(`{"x":[{"y":1}],"x":{"z":2}}`))
	f.Add([]byte(` { } `), []byte(`null`))
	f.Add([]byte(`{"a":-1.5e3,"b":true,"c":null,"d":""}`), []byte(`[{"a":1}]`))
	f.Add([]byte("{\"\xff\":[]}"), []byte("0"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		splitObject(a)   // never panics, whatever it is given
		a = validUTF8(a) // as every caller's input is
		ms, ok := splitDoc(a)
		if !json.Valid(a) {
			if ok {
				t.Fatalf("splitDoc(%q) accepted invalid JSON", a)
			}
			return
		}
		want, wantOK := objectMembers(a)
		if ok != wantOK || len(ms) != len(want) {
			t.Fatalf("splitObject(%q) = %d members, %v; want %d, %v", a, len(ms), ok, len(want), wantOK)
		}
		for i := range ms {
			if ms[i].key != want[i].key || !bytes.Equal(ms[i].val, want[i].val) {
				t.Fatalf("splitObject(%q) member %d = %q: %s, want %q: %s", a, i, ms[i].key, ms[i].val, want[i].key, want[i].val)
			}
			if cap(ms[i].val) != len(ms[i].val) {
				t.Fatalf("member %q can be appended into the input", ms[i].key)
			}
		}
		if json.Valid(b) {
			b = validUTF8(b)
			vs := []json.RawMessage{a, b, a}
			want := mergeJSON(mergeJSON(a, b), a)
			if m := mergeAll(vs); !bytes.Equal(m, want) {
				t.Fatalf("mergeAll(%q, %q, %q) = %s, merging in turn gives %s", a, b, a, m, want)
			}
		}
	})
}

// mergeJSON is mergeAll's reference: b decoded by encoding/json into what
// a decoded, one pair at a time.
func mergeJSON(a, b json.RawMessage) json.RawMessage {
	ma, okA := objectMembers(a)
	mb, okB := objectMembers(b)
	if !okA || !okB {
		return b
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for _, m := range append(ma, mb...) {
		prev, seen := vals[m.key]
		if !seen {
			keys = append(keys, m.key)
			vals[m.key] = m.val
			continue
		}
		vals[m.key] = mergeJSON(prev, m.val)
	}
	return encodeMembers(keys, vals)
}

// objectMembers is splitObject's reference: encoding/json's tokenizer
// reads the object's members in order, keys exactly as spelled (escapes
// decoded). ok is false when raw is not an object.
func objectMembers(raw []byte) (ms []member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, member{key, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	return ms, true
}

// TestStrictErrorsInKubeOrder: a body's strict decoding errors are one
// list in kube's order (as kube-apiserver v1.37.2 gave them, compared in
// e2e.TestKubeStrictDecodingSameAsOurs): a YAML body's repeated keys
// first, as the YAML decoder reports them (one warning per line), then,
// for a built-in kind, metadata's and the rest's fields in the order of
// the JSON (a YAML body's, converted, has its keys sorted); for a custom
// resource, every duplicate in the order met, at any depth, then the
// unknown fields.
func TestStrictErrorsInKubeOrder(t *testing.T) {
	e := newEnv(t)
	const yamlCT = "application/yaml"
	dupYAML := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: NAME, Name: x}\nextra: 1\ndata:\n  a: \"1\"\n  a: \"2\"\n"
	named := func(n string) string { return strings.ReplaceAll(dupYAML, "NAME", n) }
	e.expectStatus(400, "BadRequest", `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: yaml: unmarshal errors:`+"\n"+`  line 7: key "a" already set in map, unknown field "extra", unknown field "metadata.Name"`,
		"POST", cmPath+"?fieldValidation=Strict", named("s"), "Content-Type", yamlCT)
	r := e.do("POST", cmPath, named("w"), "Content-Type", yamlCT)
	want := []string{`299 - "line 7: key \"a\" already set in map"`, `299 - "unknown field \"extra\""`, `299 - "unknown field \"metadata.Name\""`}
	if got := r.hdr.Values("Warning"); r.code != 201 || !slices.Equal(got, want) {
		t.Fatalf("warn: %d %q, want %q", r.code, got, want)
	}
	if got := e.must(200, "GET", cmPath+"/w", nil); path(got, "data", "a") != "2" {
		t.Fatalf("stored %v", got)
	}
	// JSON: in the body's order, metadata's among the rest.
	e.expectStatus(400, "BadRequest", `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "extra", duplicate field "metadata.labels.a", unknown field "metadata.Name", duplicate field "data"`,
		"POST", cmPath+"?fieldValidation=Strict", `{"apiVersion":"v1","kind":"ConfigMap","extra":1,"metadata":{"name":"j","labels":{"a":"1","a":"2"},"Name":"x"},"data":{"a":"1"},"data":{"b":"1"}}`)
	// An apply patch's YAML errors are a warning per line too.
	r = e.do("PATCH", cmPath+"/ap?fieldManager=m", strings.NewReplacer(", Name: x", "", "extra: 1\n", "").Replace(named("ap")), "Content-Type", "application/apply-patch+yaml")
	if got := r.hdr.Values("Warning"); r.code != 201 || !slices.Equal(got, []string{`299 - "line 6: key \"a\" already set in map"`}) {
		t.Fatalf("apply: %d %q %s", r.code, got, r.body)
	}

	crd := crdDef("strictwidgets", "StrictWidget", "Namespaced")
	crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"] = map[string]any{"openAPIV3Schema": map[string]any{
		"type": "object", "properties": map[string]any{"spec": map[string]any{"type": "object", "properties": map[string]any{
			"a": map[string]any{"type": "integer"}, "b": map[string]any{"type": "string"}}}}}}
	e.must(201, "POST", crdPath, crd)
	wpath := "/apis/example.com/v1/namespaces/default/strictwidgets"
	e.expectStatus(400, "BadRequest", `StrictWidget in version "v1" cannot be handled as a StrictWidget: strict decoding error: duplicate field "metadata.labels.a", duplicate field "spec.a", duplicate field "spec", unknown field "metadata.Name", unknown field "spec.y"`,
		"POST", wpath+"?fieldValidation=Strict", `{"apiVersion":"example.com/v1","kind":"StrictWidget","metadata":{"name":"c","Name":"x","labels":{"a":"1","a":"2"}},"spec":{"z":1,"a":1,"a":2},"spec":{"b":"x","y":2}}`)
	e.expectStatus(400, "BadRequest", `StrictWidget in version "v1" cannot be handled as a StrictWidget: strict decoding error: yaml: unmarshal errors:`+"\n"+`  line 6: key "a" already set in map, unknown field "metadata.Name", unknown field "spec.z"`,
		"POST", wpath+"?fieldValidation=Strict", "apiVersion: example.com/v1\nkind: StrictWidget\nmetadata: {name: c, Name: x}\nspec:\n  a: 1\n  a: 2\n  z: 3\n", "Content-Type", yamlCT)
	r = e.do("POST", wpath, `{"apiVersion":"example.com/v1","kind":"StrictWidget","metadata":{"name":"w"},"spec":{"z":1,"a":1,"a":2}}`)
	if got := r.hdr.Values("Warning"); r.code != 201 || !slices.Equal(got, []string{`299 - "duplicate field \"spec.a\""`, `299 - "unknown field \"spec.z\""`}) {
		t.Fatalf("custom resource: %d %q %s", r.code, got, r.body)
	}
}

// TestStrictErrorsGiveWayToDecodeFaults: a body kube's decoder cannot
// decode (a value of the wrong type, even one a repeated key replaces; a
// custom resource's metadata that is not an ObjectMeta) gets its decode
// error alone, under every fieldValidation: no warnings of repeated YAML
// keys or unknown fields, no strict 400. A custom resource without kind
// is quoted as sent.
func TestStrictErrorsGiveWayToDecodeFaults(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("up", nil, nil))
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	const yamlCT = "application/yaml"
	wpath := "/apis/example.com/v1/namespaces/default/widgets"
	const typeErr = `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string`
	for _, tc := range []struct{ method, path, ctype, body, msg string }{
		{"POST", cmPath, yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1}\nx: 1\ndata:\n  a: 1\n  a: 2\n", typeErr},
		{"PUT", cmPath + "/up", yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: up, name: up}\ndata:\n  a: 1\n", typeErr},
		{"POST", cmPath, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j","name":"j"},"data":{"a":1}}`, typeErr},
		{"POST", cmPath, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"},"x":1,"data":{"a":1},"data":{"a":"2"}}`, typeErr},
		{"POST", wpath, yamlCT, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: 5}\nspec:\n  a: 1\n  a: 2\n",
			`Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string`},
	} {
		for _, fv := range []string{"", "?fieldValidation=Strict", "?fieldValidation=Ignore"} {
			r := e.do(tc.method, tc.path+fv, tc.body, "Content-Type", tc.ctype)
			var st struct{ Message string }
			_ = json.Unmarshal(r.body, &st)
			if r.code != 400 || st.Message != tc.msg || len(r.hdr.Values("Warning")) > 0 {
				t.Errorf("%s %s%s %q: %d %q %s, want 400 %q", tc.method, tc.path, fv, tc.body, r.code, r.hdr.Values("Warning"), r.body, tc.msg)
			}
		}
	}
}

// TestCustomResourceBodyTypeMetaAsKube: a custom resource's body without
// kind or apiVersion, or of another kind, with repeated keys, is answered
// as kube's decoder and handler answer it under each fieldValidation:
// without kind, the strict decoder's error quotes the body as sent and
// the lax one's the JSON it read; without apiVersion, the repeated keys
// are reported (Warn) or the object cannot be typed (Strict) before the
// apiVersion is checked; a strict error names the body's kind.
func TestCustomResourceBodyTypeMetaAsKube(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	wpath := "/apis/example.com/v1/namespaces/default/widgets"
	const noKind = "apiVersion: example.com/v1\nmetadata: {name: w1}\nspec:\n  a: 1\n  a: 2\n"
	const noAPIVersion = "kind: Widget\nmetadata: {name: w1}\nspec:\n  a: 1\n  a: 2\n"
	const otherKind = "apiVersion: example.com/v1\nkind: Other\nmetadata: {name: w1}\nspec:\n  a: 1\n  a: 2\n"
	const wrongVersion = "the API version in the data () does not match the expected API version (example.com/v1)"
	const dupWarning = `299 - "line 5: key \"a\" already set in map"`
	for _, tc := range []struct {
		fv, body, msg, warning string
	}{
		{"Strict", noKind, "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '" + noKind + "' (61706956657273696f6e3a206578616d706c652e636f6d2f76310a6d6574 ...)", ""},
		{"Warn", noKind, "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '" + noKind + "' (61706956657273696f6e3a206578616d706c652e636f6d2f76310a6d6574 ...)", ""},
		{"Ignore", noKind, `Widget in version "v1" cannot be handled as a Widget: Object 'Kind' is missing in '{"apiVersion":"example.com/v1","metadata":{"name":"w1"},"spec":{"a":2}}'`, ""},
		{"Strict", noAPIVersion, "Object 'apiVersion' is missing in 'object has no apiVersion field'", ""},
		{"Warn", noAPIVersion, wrongVersion, dupWarning},
		{"Ignore", noAPIVersion, wrongVersion, ""},
		{"Strict", otherKind, `Other in version "v1" cannot be handled as a Other: strict decoding error: yaml: unmarshal errors:` + "\n" + `  line 6: key "a" already set in map`, ""},
	} {
		r := e.do("POST", wpath+"?fieldValidation="+tc.fv, tc.body, "Content-Type", "application/yaml")
		var st struct{ Message string }
		_ = json.Unmarshal(r.body, &st)
		if w := strings.Join(r.hdr.Values("Warning"), "|"); r.code != 400 || st.Message != tc.msg || w != tc.warning {
			t.Errorf("%s %q: %d %q %s, want 400 %q %q", tc.fv, tc.body, r.code, w, r.body, tc.warning, tc.msg)
		}
	}
}
