package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestKubeYAMLSameAsOurs sends the same requests with Accept:
// application/yaml to kube-apiserver and to serve: an object, a list, a
// Table, a create's answer, Status errors and successes, of a built-in
// kind and of a custom resource. Each answer has the same code and
// content type, and its YAML the same content once the values that differ
// between any two servers (uids, resourceVersions, times) are masked.
// Lists (and a deletecollection's answer) are compared in JSON too: a
// built-in kind's items carry no apiVersion and kind, a custom
// resource's do. Watches, which YAML cannot be, are refused once their
// options are read.
func TestKubeYAMLSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	// Numbers, booleans, nulls and a YAML-ish string.
	ws, widget := widgetsSideBySide(t, ns, `{"spec":{"n":1,"f":1.5,"s":"yes","l":[true,null]}}`, kube, ours)
	for _, c := range []*rawClient{kube, ours} {
		for path, body := range map[string]string{
			cms: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","annotations":{"x":"1"},"labels":{"l":"1"}},"data":{"k":"multi\nline","on":"yes"}}`,
			ws:  widget("w1"),
		} {
			if code, m := c.do("POST", path, jsonCT, body); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", path, code, m)
			}
		}
	}
	const yamlCT = "application/yaml"
	for _, r := range []struct{ method, path, accept, ctype, body string }{
		{"GET", cms + "/b", yamlCT, "", ""},
		{"GET", cms + "?labelSelector=l%3D1", yamlCT, "", ""},
		{"GET", cms + "?labelSelector=l%3D1", "application/json", "", ""},
		{"GET", cms + "/nope", yamlCT, "", ""},
		{"GET", cms + "/b", "application/yaml;as=Table;g=meta.k8s.io;v=v1", "", ""},
		{"GET", cms + "/b", "application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "", ""},
		{"GET", cms + "/b", "application/yaml, application/json", "", ""},
		{"GET", cms + "/b", "application/vnd.kubernetes.protobuf;q=0.5, application/yaml", "", ""},
		{"POST", cms, yamlCT, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"n":"1"}}`},
		{"POST", cms, yamlCT, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`},
		{"PATCH", cms + "/b", yamlCT, "application/merge-patch+json", `{"data":{"p":"q"}}`},
		{"DELETE", cms + "/c", yamlCT, "", ""},
		{"GET", ws + "/w1", yamlCT, "", ""},
		{"GET", ws, yamlCT, "", ""},
		{"GET", ws + "/nope", yamlCT, "", ""},
		{"GET", ws + "/w1", "application/yaml;as=Table;g=meta.k8s.io;v=v1", "", ""},
		{"GET", ws, "application/json", "", ""},
		{"DELETE", cms + "?labelSelector=l%3D1", "application/json", "", ""},
		// A watch cannot be YAML: kube's 406, once its options (and its
		// Table's) are read, whose errors come first.
		{"GET", cms + "?watch=1&timeoutSeconds=1", yamlCT, "", ""},
		{"GET", cms + "?watch=1&timeoutSeconds=1&labelSelector=%3D%3D", yamlCT, "", ""},
		{"GET", "/api/v1/watch/namespaces/" + ns + "/configmaps?timeoutSeconds=1&limit=abc", yamlCT, "", ""},
		{"GET", cms + "?watch=1&timeoutSeconds=1&includeObject=x", "application/yaml;as=Table;g=meta.k8s.io;v=v1", "", ""},
		{"GET", ws + "?watch=1&timeoutSeconds=1&labelSelector=%3D%3D", yamlCT, "", ""},
	} {
		k, o := kube.yamlAnswer(r.method, r.path, r.accept, r.ctype, r.body), ours.yamlAnswer(r.method, r.path, r.accept, r.ctype, r.body)
		if k != o {
			t.Errorf("%s %s [%s]:\n kube:  %s\n serve: %s", r.method, r.path, r.accept, k, o)
		}
	}
}

// volatile are the values that differ between two servers for the same
// requests: uids, resourceVersions, times and ages.
var volatile = regexp.MustCompile(`("(?:uid|resourceVersion|creationTimestamp|time)":)"[^"]*"|"(?:\d+[smhdy])+"`)

// yamlAnswer describes an answer given in YAML: code, content type, and
// its content (as JSON, volatile values masked).
func (c *rawClient) yamlAnswer(method, path, accept, ctype, body string) string {
	c.t.Helper()
	code, hdr, b := c.send(method, path, ctype, accept, body)
	j, err := sigsyaml.YAMLToJSON(b)
	if err != nil {
		return fmt.Sprintf("%d %s not YAML (%v): %q", code, hdr.Get("Content-Type"), err, b)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return fmt.Sprintf("%d %s: %v", code, hdr.Get("Content-Type"), err)
	}
	j, _ = json.Marshal(v) // keys sorted
	return fmt.Sprintf("%d %s %s", code, hdr.Get("Content-Type"), volatile.ReplaceAll(j, []byte(`${1}"X"`)))
}
