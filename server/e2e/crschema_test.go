package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// CRD schemas as a client sees them: pruning, defaulting (on write and on
// read), validation with kube's field paths and messages, CEL rules with
// transition rules and messageExpression, printer columns with full
// JSONPath, and deprecated versions. The same script runs against
// listwatch and, when it is built, a real kube-apiserver; the two
// transcripts must be the same.

const schemaGroup = "schematest.example.com"

// thingSchema is the schema of every version of things.
const thingSchema = `{"type":"object","properties":{
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

const thingColumns = `"additionalPrinterColumns":[
 {"name":"Name","type":"string","jsonPath":".spec.name"},
 {"name":"Replicas","type":"integer","jsonPath":".spec.replicas"},
 {"name":"HTTP","type":"integer","jsonPath":".spec.ports[?(@.name==\"http\")].port"},
 {"name":"Tags","type":"string","jsonPath":".spec.tags[*]","priority":1},
 {"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}]`

func thingCRD(schema string) string {
	version := func(name string, storage bool, extra string) string {
		return `{"name":"` + name + `","served":true,"storage":` + fmt.Sprint(storage) + `,` + extra +
			`"subresources":{"status":{}},` + thingColumns + `,"schema":{"openAPIV3Schema":` + schema + `}}`
	}
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"things.` + schemaGroup + `"},
		"spec":{"group":"` + schemaGroup + `","scope":"Namespaced",
		"names":{"plural":"things","singular":"thing","kind":"Thing"},
		"versions":[` + version("v1", true, "") + `,` +
		version("v1beta1", false, `"deprecated":true,`) + `,` +
		version("v1alpha1", false, `"deprecated":true,"deprecationWarning":"v1alpha1 things go away soon",`) + `]}}`
}

// schemaStep sends a request and records its code, its Warning headers,
// and for a Status its reason, message and causes, else the fields named.
func schemaStep(c *rawClient, name, method, path, ctype, body string, fields ...string) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	if strings.HasPrefix(name, "table") {
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	line := fmt.Sprintf("%s: %d", name, resp.StatusCode)
	if w := resp.Header.Values("Warning"); len(w) > 0 {
		line += fmt.Sprintf(" warnings=%q", w)
	}
	if m["kind"] == "Status" {
		msg, _ := m["message"].(string)
		if i := strings.LastIndex(msg, ": strict decoding error"); i >= 0 && strings.Contains(name, "patch") {
			msg = "..." + msg[i:] // the rest is the patched object, with server-chosen values
		}
		if strings.HasPrefix(name, "unordered") {
			msg = "..." // kube's validator visits properties in map order
		}
		line += fmt.Sprintf(" %v %q", m["reason"], msg)
		if d, ok := m["details"].(map[string]any); ok {
			if cs, ok := d["causes"].([]any); ok {
				var causes []string
				for _, cause := range cs {
					cm := cause.(map[string]any)
					cmsg, _ := cm["message"].(string)
					if i := strings.LastIndex(cmsg, ": strict decoding error"); i >= 0 && strings.Contains(name, "patch") {
						cmsg = "..." + cmsg[i:]
					}
					causes = append(causes, fmt.Sprintf("%v|%v|%v", cm["reason"], cm["field"], cmsg))
				}
				if strings.HasPrefix(name, "unordered") {
					sort.Strings(causes)
				}
				line += fmt.Sprintf(" causes=%q", causes)
			}
		}
	} else {
		for _, f := range fields {
			line += fmt.Sprintf(" %s=%s", f, jsonAt(m, f))
		}
	}
	c.log = append(c.log, line)
	return m
}

// waitSchemaServed polls until version v of things is served.
func waitSchemaServed(c *rawClient, v string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := c.do("GET", "/apis/"+schemaGroup+"/"+v+"/namespaces/default/things", "", "")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("things %s not served: %d", v, code)
		}
		time.Sleep(50 * time.Millisecond) // polling for an asynchronous condition
	}
}

func thing(name, spec string) string {
	return `{"apiVersion":"` + schemaGroup + `/v1","kind":"Thing","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
}

// crSchemaScript is the script both servers run (~50 requests).
func crSchemaScript(c *rawClient) []string {
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	schemaStep(c, "crd", "POST", crds, jsonCT, thingCRD(thingSchema), "metadata.name")
	c.t.Cleanup(func() { c.do("DELETE", crds+"/things."+schemaGroup, "", "") })
	schemaStep(c, "crd not structural", "POST", crds, jsonCT, strings.Replace(
		strings.Replace(thingCRD(`{"type":"object","properties":{"spec":{"properties":{"a":{"type":"string"}}}}}`),
			"things", "others", -1), `"Thing"`, `"Other"`, -1))
	schemaStep(c, "crd bad default", "POST", crds, jsonCT, strings.Replace(strings.Replace(thingCRD(
		`{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer","default":"x"}}}}}`),
		"things", "baddefaults", -1), `"Thing"`, `"Baddefault"`, -1))
	schemaStep(c, "crd bad rule", "POST", crds, jsonCT, strings.Replace(strings.Replace(thingCRD(
		`{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.nope > 1"}],"properties":{"a":{"type":"string"}}}}}`),
		"things", "badrules", -1), `"Thing"`, `"Badrule"`, -1))
	schemaStep(c, "crd rule too expensive", "POST", crds, jsonCT, strings.Replace(strings.Replace(thingCRD(
		`{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, self.l.all(z, x + y + z != '')))"}],"properties":{"l":{"type":"array","items":{"type":"string"}}}}}}`),
		"things", "costlies", -1), `"Thing"`, `"Costly"`, -1))
	schemaStep(c, "crd bad column", "POST", crds, jsonCT, strings.Replace(strings.Replace(strings.Replace(thingCRD(thingSchema),
		`".spec.replicas"`, `"spec.replicas["`, 1), "things", "badcolumns", -1), `"Thing"`, `"Badcolumn"`, -1))
	waitSchemaServed(c, "v1")
	waitSchemaServed(c, "v1beta1")
	waitSchemaServed(c, "v1alpha1")

	t := "/apis/" + schemaGroup + "/v1/namespaces/default/things"
	spec := []string{"spec"}
	schemaStep(c, "defaults", "POST", t, jsonCT, thing("a", `{"name":"abc"}`), "spec", "status")
	schemaStep(c, "unknown strict", "POST", t+"?fieldValidation=Strict", jsonCT,
		thing("b", `{"name":"abc","bogus":1,"extra":{"kept":true},"ports":[{"name":"x","bad":2}]}`))
	schemaStep(c, "unknown warn", "POST", t, jsonCT,
		`{"apiVersion":"`+schemaGroup+`/v1","kind":"Thing","metadata":{"name":"b"},"top":1,"spec":{"name":"abc","bogus":1,"extra":{"kept":true},"ports":[{"name":"x","bad":2}]}}`, spec...)
	schemaStep(c, "unknown metadata and spec strict", "POST", t+"?fieldValidation=Strict", jsonCT,
		`{"apiVersion":"`+schemaGroup+`/v1","kind":"Thing","metadata":{"name":"m","colour":1},"spec":{"name":"abc","bogus":1}}`)
	schemaStep(c, "unknown metadata and spec warn", "POST", t, jsonCT,
		`{"apiVersion":"`+schemaGroup+`/v1","kind":"Thing","metadata":{"name":"m","colour":1},"spec":{"name":"abc","bogus":1}}`, "spec.bogus", "metadata.colour")
	schemaStep(c, "update unknown strict", "PUT", t+"/m?fieldValidation=Strict", jsonCT,
		`{"apiVersion":"`+schemaGroup+`/v1","kind":"Thing","metadata":{"name":"m","colour":1},"spec":{"name":"abc","bogus":1}}`)
	schemaStep(c, "unknown ignore", "POST", t+"?fieldValidation=Ignore", jsonCT, thing("c", `{"name":"abc","bogus":1}`), spec...)
	schemaStep(c, "type", "POST", t, jsonCT, thing("x", `{"name":"abc","replicas":"two"}`))
	schemaStep(c, "enum", "POST", t, jsonCT, thing("x", `{"name":"abc","mode":"medium"}`))
	schemaStep(c, "minimum", "POST", t, jsonCT, thing("x", `{"name":"abc","replicas":-1}`))
	schemaStep(c, "maximum", "POST", t, jsonCT, thing("x", `{"name":"abc","replicas":11,"maxReplicas":20}`))
	schemaStep(c, "pattern", "POST", t, jsonCT, thing("x", `{"name":"ABC"}`))
	schemaStep(c, "minLength", "POST", t, jsonCT, thing("x", `{"name":"a"}`))
	schemaStep(c, "maxLength", "POST", t, jsonCT, thing("x", `{"name":"abcdefghijkl"}`))
	schemaStep(c, "required", "POST", t, jsonCT, thing("x", `{"mode":"slow"}`))
	schemaStep(c, "no spec", "POST", t, jsonCT, `{"apiVersion":"`+schemaGroup+`/v1","kind":"Thing","metadata":{"name":"x"}}`, spec...)
	schemaStep(c, "nulls", "POST", t, jsonCT, thing("n", `{"name":"abc","note":null,"ratio":null,"replicas":null}`), spec...)
	schemaStep(c, "int-or-string", "POST", t, jsonCT, thing("p", `{"name":"abc","port":"http"}`), spec...)
	schemaStep(c, "int-or-string bad", "POST", t, jsonCT, thing("x", `{"name":"abc","port":true}`))
	schemaStep(c, "multipleOf", "POST", t, jsonCT, thing("x", `{"name":"abc","ratio":0.3}`))
	schemaStep(c, "format", "POST", t, jsonCT, thing("x", `{"name":"abc","when":"yesterday"}`))
	schemaStep(c, "set duplicate", "POST", t, jsonCT, thing("x", `{"name":"abc","tags":["a","a"]}`))
	schemaStep(c, "map duplicate", "POST", t, jsonCT, thing("x", `{"name":"abc","ports":[{"name":"h","port":1},{"name":"h","port":2}]}`))
	schemaStep(c, "maxItems", "POST", t, jsonCT, thing("x", `{"name":"abc","tags":["a","b","c","d"]}`))
	schemaStep(c, "maxProperties", "POST", t, jsonCT, thing("x", `{"name":"abc","labels":{"a":"1","b":"2","c":"3"}}`))
	schemaStep(c, "embedded no kind", "POST", t, jsonCT, thing("x", `{"name":"abc","template":{"metadata":{"name":"t"}}}`))
	schemaStep(c, "embedded bad name", "POST", t, jsonCT, thing("x", `{"name":"abc","template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"}}}`))
	schemaStep(c, "embedded", "POST", t, jsonCT, thing("e", `{"name":"abc","template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"t","bogus":1},"spec":{"x":1}}}`), spec...)
	schemaStep(c, "cel rule", "POST", t, jsonCT, thing("x", `{"name":"abc","minReplicas":6}`))
	schemaStep(c, "cel messageExpression", "POST", t, jsonCT, thing("x", `{"name":"forbidden"}`))
	schemaStep(c, "unordered errors", "POST", t, jsonCT, thing("x", `{"name":"A","mode":"x","replicas":99,"tags":["a","a"]}`))
	schemaStep(c, "full", "POST", t, jsonCT, thing("f", `{"name":"full","replicas":3,"fixed":"one","tags":["x","y"],"ports":[{"name":"grpc","port":9},{"name":"http","port":80}]}`), spec...)

	f := t + "/f"
	schemaStep(c, "transition rule", "PATCH", f, mergePatch, `{"spec":{"fixed":"two"}}`)
	schemaStep(c, "update invalid", "PATCH", f, mergePatch, `{"spec":{"replicas":12}}`)
	schemaStep(c, "patch unknown strict", "PATCH", f+"?fieldValidation=Strict", mergePatch, `{"spec":{"bogus":1}}`)
	schemaStep(c, "update unknown warn", "PATCH", f, mergePatch, `{"spec":{"bogus":1,"replicas":4}}`, "spec.replicas", "spec.bogus", "metadata.generation")
	schemaStep(c, "update removes default", "PATCH", f, jsonPatch, `[{"op":"remove","path":"/spec/mode"}]`, "spec.mode")
	schemaStep(c, "status invalid", "PATCH", f+"/status", mergePatch, `{"status":{"phase":"C"}}`)
	schemaStep(c, "status unknown", "PATCH", f+"/status", mergePatch, `{"status":{"phase":"A","bogus":1}}`, "status")
	schemaStep(c, "status cannot break spec", "PATCH", f+"/status", mergePatch, `{"spec":{"replicas":99},"status":{"phase":"B"}}`, "spec.replicas", "status")

	schemaStep(c, "deprecated default warning", "GET", "/apis/"+schemaGroup+"/v1beta1/namespaces/default/things/f", "", "", "apiVersion", "spec.name")
	schemaStep(c, "deprecated own warning", "GET", "/apis/"+schemaGroup+"/v1alpha1/namespaces/default/things", "", "", "kind")
	schemaStep(c, "table", "GET", t+"/f", "", "", "columnDefinitions")
	tbl := schemaStep(c, "table list", "GET", t, "", "")
	if rows, ok := tbl["rows"].([]any); ok {
		for _, r := range rows {
			cells := r.(map[string]any)["cells"].([]any)
			c.log = append(c.log, fmt.Sprintf("row: %v", cells[:len(cells)-1])) // not Age
		}
	}

	// A default added to the schema shows on objects stored without it.
	cur := schemaStep(c, "get crd", "GET", crds+"/things."+schemaGroup, "", "")
	b, _ := json.Marshal(cur)
	newer := strings.Replace(string(b), `"mode":{"default":"fast"`, `"mode":{"default":"slow"`, 1)
	newer = strings.Replace(newer, `"fixed":{`, `"added":{"default":"yes","type":"string"},"fixed":{`, -1)
	schemaStep(c, "add a default", "PUT", crds+"/things."+schemaGroup, jsonCT, newer)
	waitThingDefault(c, t+"/a")
	schemaStep(c, "read defaults", "GET", t+"/a", "", "", "spec")
	list := schemaStep(c, "list defaults", "GET", t+"?fieldSelector=metadata.name%3Dn", "", "")
	if items, ok := list["items"].([]any); ok {
		for _, it := range items {
			c.log = append(c.log, "item: "+jsonAt(it.(map[string]any), "spec"))
		}
	}
	schemaStep(c, "patch over read defaults", "PATCH", t+"/a", mergePatch, `{"spec":{"replicas":2}}`, "spec")
	return c.log
}

// waitThingDefault polls until the changed CRD is served (the object
// read shows spec.added).
func waitThingDefault(c *rawClient, p string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, m := c.do("GET", p, "", "")
		if jsonAt(m, "spec.added") != "-" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the new default is not served: %v", m)
		}
		time.Sleep(50 * time.Millisecond) // polling for an asynchronous condition
	}
}

// TestCustomResourceSchemaLikeKube runs crSchemaScript against listwatch
// and, if built, kube-apiserver, and compares the transcripts.
func TestCustomResourceSchemaLikeKube(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	ours := crSchemaScript(newRawClient(t, restConfig(t, s)))
	t.Logf("listwatch transcript:\n%s", strings.Join(ours, "\n"))
	for _, want := range []string{
		`defaults: 201 spec={"maxReplicas":5,"minReplicas":0,"mode":"fast","name":"abc","replicas":1}`,
		`unknown strict: 400 BadRequest "Thing in version \"v1\" cannot be handled as a Thing: strict decoding error: unknown field \"spec.bogus\", unknown field \"spec.ports[0].bad\""`,
		`cel messageExpression: 422 Invalid`,
		`deprecated default warning: 200 warnings=["299 - \"schematest.example.com/v1beta1 Thing is deprecated; use schematest.example.com/v1 Thing\""]`,
		`read defaults: 200 spec={"added":"yes"`,
	} {
		found := false
		for _, l := range ours {
			if strings.HasPrefix(l, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("listwatch transcript lacks %q", want)
		}
	}
	if testing.Short() {
		return
	}
	compareLogs(t, ours, crSchemaScript(newRawClient(t, kubeRESTConfig(t))))
}
