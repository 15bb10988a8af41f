package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestKubeStrictDecodingSameAsOurs sends bodies with unknown and repeated
// fields, JSON and YAML, built-in and custom, as creates, updates and
// applies under each fieldValidation, to kube-apiserver and to serve: the
// same code, message and Warning headers. kube lists a body's strict
// decoding errors in one message (or one warning each) in the order its
// decoder meets them: a YAML body's repeated keys first, one warning per
// line of the YAML decoder's error, then metadata's and the rest's unknown
// fields in the order of the JSON the body is (a YAML body's converts with
// sorted keys).
func TestKubeStrictDecodingSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	const plural = "strictwidgets"
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"` + plural + `.` + crGroup + `"},
		"spec":{"group":"` + crGroup + `","scope":"Namespaced",
		"names":{"plural":"` + plural + `","singular":"strictwidget","kind":"StrictWidget"},
		"versions":[{"name":"v1","served":true,"storage":true,
		"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}}}}}]}}`
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	deps := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	crs := "/apis/" + crGroup + "/v1/namespaces/" + ns + "/" + plural
	for _, c := range []*rawClient{kube, ours} {
		if code, m := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jsonCT, crd); code != http.StatusCreated && code != http.StatusConflict {
			t.Fatalf("crd: %d %v", code, m)
		}
		c.waitServed(plural)
		if code, m := c.do("POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"up"}}`); code != http.StatusCreated {
			t.Fatalf("configmap: %d %v", code, m)
		}
	}
	const yamlCT, applyCT = "application/yaml", "application/apply-patch+yaml"
	steps := []struct{ method, path, ctype, body string }{
		{"POST", cms, yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y1}\ndata:\n  a: \"1\"\n  a: \"2\"\n"},
		{"POST", cms, yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y2}\nextra: 1\ndata:\n  a: \"1\"\n  a: \"2\"\n  b: \"1\"\n  b: \"2\"\n"},
		{"POST", cms, yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y3, Name: x}\ndata:\n  a: \"1\"\n  a: \"2\"\n"},
		{"POST", cms, yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y4, Name: x}\nextra: 1\ndata:\n  a: \"1\"\n"},
		{"POST", cms, yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y5}\nmetadata: {labels: {a: b}}\ndata:\n  a: \"1\"\n"},
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j1","Name":"x"},"extra":1,"data":{"a":"1"}}`},
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","extra":1,"metadata":{"name":"j2","labels":{"a":"1","a":"2"}},"data":{"a":"1"},"data":{"b":"1"}}`},
		{"PUT", cms + "/up", yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: up, Name: q}\nzz: 1\ndata:\n  a: \"1\"\n  a: \"3\"\n"},
		{"PATCH", cms + "/ap?fieldManager=m", applyCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ap}\ndata:\n  a: \"1\"\n  a: \"2\"\n"},
		{"POST", crs, yamlCT, "apiVersion: " + crGroup + "/v1\nkind: StrictWidget\nmetadata: {name: c1, Name: x}\nspec:\n  a: 1\n  a: 2\n  z: 3\n"},
		{"POST", crs, jsonCT, `{"apiVersion":"` + crGroup + `/v1","kind":"StrictWidget","metadata":{"name":"c2"},"spec":{"z":1,"a":1,"a":2}}`},
		{"POST", crs, jsonCT, `{"apiVersion":"` + crGroup + `/v1","kind":"StrictWidget","metadata":{"name":"c3","Name":"x","labels":{"a":"1","a":"2"}},"spec":{"z":1,"a":1,"a":2},"spec":{"b":"x","y":2}}`},
		{"POST", crs, jsonCT, `{"apiVersion":"` + crGroup + `/v1","kind":"StrictWidget","metadata":{"Name":"x","name":"c4"},"x":1,"spec":{"a":1,"a":2}}`},
		// A body kube's decoder cannot decode gets that error alone.
		{"POST", cms, yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y6}\nx: 1\ndata:\n  a: 1\n  a: 2\n"},
		{"POST", deps, yamlCT, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: y7\nspec:\n  replicas: 1\n  replicas: 2\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      containers:\n      - name: c\n        image: x\n        image: y\n"},
		{"PUT", cms + "/up", yamlCT, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: up, name: up}\ndata:\n  a: 1\n"},
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j3","name":"j3"},"data":{"a":1}}`},
		{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j4"},"x":1,"data":{"a":1},"data":{"a":"2"}}`},
		{"POST", crs, yamlCT, "apiVersion: " + crGroup + "/v1\nkind: StrictWidget\nmetadata: {name: 5}\nspec:\n  a: 1\n  a: 2\n"},
		{"POST", crs, yamlCT, "apiVersion: " + crGroup + "/v1\nkind: StrictWidget\nmetadata: {name: c5, labels: 5}\nspec:\n  a: 1\n  a: 2\n"},
		{"POST", crs, yamlCT, "apiVersion: " + crGroup + "/v1\nmetadata: {name: c6}\nspec:\n  a: 1\n  a: 2\n"},
		{"POST", crs, yamlCT, "kind: StrictWidget\nmetadata: {name: c7}\nspec:\n  a: 1\n  a: 2\n"},
		{"POST", crs, yamlCT, "apiVersion: " + crGroup + "/v1\nkind: Other\nmetadata: {name: c8}\nspec:\n  a: 1\n  a: 2\n"},
		{"POST", crs, yamlCT, "apiVersion: " + crGroup + "/v1\nkind: StrictWidget\nmetadata: {name: c9}\nspec:\n  a: x\n  a: 2\n  b: 3\n"},
		{"POST", crs, jsonCT, `{"apiVersion":"` + crGroup + `/v1","metadata":{"name":"c10"},"spec":{"a":1,"a":2}}`},
		{"POST", crs, jsonCT, `{"kind":"StrictWidget","metadata":{"name":"c11","labels":{"a":"1","a":"2"}},"spec":{"a":1,"a":2},"x":1}`},
	}
	answer := func(c *rawClient, method, path, ctype, body string) string {
		code, hdr, b := c.send(method, path, ctype, "application/json", body)
		s := fmt.Sprintf("%d %q", code, hdr.Values("Warning"))
		if code >= 300 {
			s += " " + string(b)
		}
		return s
	}
	for _, fv := range []string{"Strict", "Warn", "Ignore", ""} {
		for _, step := range steps {
			sep := "?"
			if strings.Contains(step.path, "?") {
				sep = "&"
			}
			path := step.path + sep + "dryRun=All"
			if fv != "" {
				path += "&fieldValidation=" + fv
			}
			k, o := answer(kube, step.method, path, step.ctype, step.body), answer(ours, step.method, path, step.ctype, step.body)
			if k != o {
				t.Errorf("%s %s %q:\n kube  %s\n serve %s", step.method, path, step.body, k, o)
			}
		}
	}
	// The comparison can fail: kube warns of a repeated YAML key.
	if w := answer(kube, "POST", cms+"?dryRun=All", yamlCT, steps[0].body); w != `201 ["299 - \"line 6: key \\\"a\\\" already set in map\""]` {
		t.Errorf("kube's answer to a repeated YAML key: %s", w)
	}
}
