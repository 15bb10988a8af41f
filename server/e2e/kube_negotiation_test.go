package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestKubeNegotiationSameAsOurs sends the same requests with the same
// Accept headers to kube-apiserver and to serve, on a built-in kind and a
// custom resource: the same code, content type and, for a Status, reason
// and message. Among them: the 406s of kube's router (built-in kinds) and
// of its negotiation, partial metadata asked of one object or of a list,
// and writes with an unacceptable Accept, which kube refuses before
// writing anything (the objects made on each are compared at the end),
// and watches, and the stream media types asked for anywhere. (What a YAML answer holds: TestKubeYAMLSameAsOurs.)
func TestKubeNegotiationSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	ws, widget := widgetsSideBySide(t, ns, `{}`, kube, ours)
	for _, c := range []*rawClient{kube, ours} {
		for path, body := range map[string]string{cms: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`, ws: widget("w1")} {
			if code, m := c.do("POST", path, jsonCT, body); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", path, code, m)
			}
		}
	}
	accepts := []string{
		"text/html", "application/*", "*/*", "application/json, text/html", "text/html, application/*",
		"application/json;as=Bogus;g=meta.k8s.io;v=v1", "application/json;as=Table;v=v1",
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
		"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf, application/json",
		"application/yaml", "application/yaml;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "text/html, application/yaml;q=0.5",
		// Stream media types on any request: YAML has none (406).
		"application/yaml;stream=watch", "application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch",
	}
	for i, accept := range accepts {
		name := fmt.Sprintf("n%d", i)
		for _, r := range []struct{ method, path, ctype, body string }{
			{"GET", cms + "/b", "", ""},
			{"GET", cms, "", ""},
			{"GET", cms + "/nope", "", ""},
			{"GET", ws + "/w1", "", ""},
			{"GET", ws, "", ""},
			{"GET", ws + "/nope", "", ""},
			{"POST", cms, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`},
			{"POST", cms, "text/plain", "x"},
			{"PATCH", cms + "/b", "text/plain", "x"},
			{"PATCH", cms + "/b", "application/merge-patch+json", `{}`},
			{"DELETE", cms + "/nope", "", ""},
			{"POST", ws, jsonCT, widget(name)},
			{"GET", cms + "?watch=1&timeoutSeconds=1", "", ""},
			{"GET", ws + "?watch=1&timeoutSeconds=1", "", ""},
		} {
			k, o := kube.accepting(r.method, r.path, accept, r.ctype, r.body), ours.accepting(r.method, r.path, accept, r.ctype, r.body)
			if k != o {
				t.Errorf("%s %s %s [%s]:\n kube:  %s\n serve: %s", r.method, r.path, r.ctype, accept, k, o)
			}
		}
	}
	// Tables of kinds whose cells serve makes itself: kube's column
	// definitions (types, descriptions, which columns).
	for _, r := range []string{"configmaps", "secrets", "serviceaccounts", "events"} {
		path := "/api/v1/namespaces/" + ns + "/" + r
		k, o := kube.columns(path), ours.columns(path)
		if k != o {
			t.Errorf("%s Table columns:\n kube:  %s\n serve: %s", r, k, o)
		}
	}
	// A watch from a resourceVersion not reached yet starts (200) and
	// waits for what comes after it, as kube's cacher lets it.
	for _, c := range []*rawClient{kube, ours} {
		_, m := c.do("GET", cms, "", "")
		rv, err := strconv.ParseInt(strings.Trim(jsonAt(m, "metadata.resourceVersion"), `"`), 10, 64)
		if err != nil {
			t.Fatalf("list resourceVersion: %v", m["metadata"])
		}
		if got := c.accepting("GET", fmt.Sprintf("%s?watch=1&timeoutSeconds=1&resourceVersion=%d", cms, rv+1000), "application/json", "", ""); got != "200 application/json" {
			t.Errorf("%s: watch from a future resourceVersion: %s", c.host, got)
		}
	}
	names := func(c *rawClient, path string) []string {
		_, m := c.do("GET", path, "", "")
		var out []string
		items, _ := m["items"].([]any)
		for _, it := range items {
			if n := jsonAt(it.(map[string]any), "metadata.name"); n != `"kube-root-ca.crt"` {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, path := range []string{cms, ws} {
		if k, o := names(kube, path), names(ours, path); !slices.Equal(k, o) {
			t.Errorf("%s: kube holds %v, serve %v", path, k, o)
		}
	}
}

// widgetsSideBySide serves Widgets (a CRD of group <ns>.example.com,
// namespaced, any fields kept) on each client's server, deleted when the
// test ends, and returns their collection in ns and a Widget's JSON by
// name, with the extra fields of fields (a JSON object).
func widgetsSideBySide(t *testing.T, ns, fields string, clients ...*rawClient) (string, func(name string) string) {
	t.Helper()
	group := ns + ".example.com"
	ws := "/apis/" + group + "/v1/namespaces/" + ns + "/widgets"
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.` + group + `"},` +
		`"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},` +
		`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	widget := func(name string) string {
		head := `{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"` + name + `"}`
		if fields == "{}" {
			return head + "}"
		}
		return head + "," + fields[1:]
	}
	for _, c := range clients {
		if code, m := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jsonCT, crd); code != http.StatusCreated {
			t.Fatalf("crd: %d %v", code, m)
		}
		t.Cleanup(func() {
			c.do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets."+group, "", "")
		})
		c.await(ws+"?dryRun=All", widget("w1"), func(code int, _ map[string]any) bool { return code == http.StatusCreated })
	}
	return ws, widget
}

// accepting sends a request with an Accept header and describes the
// answer: code, content type and, for a JSON Status, its reason and
// message.
func (c *rawClient) accepting(method, path, accept, ctype, body string) string {
	c.t.Helper()
	code, hdr, b := c.send(method, path, ctype, accept, body)
	out := fmt.Sprintf("%d %s", code, hdr.Get("Content-Type"))
	var m map[string]any
	if json.Unmarshal(b, &m) == nil && m["kind"] == "Status" {
		out += fmt.Sprintf(" %v %q", m["reason"], m["message"])
	}
	return out
}

// columns is the JSON of the column definitions of path's Table.
func (c *rawClient) columns(path string) string {
	c.t.Helper()
	_, _, b := c.send("GET", path, "", "application/json;as=Table;g=meta.k8s.io;v=v1", "")
	var tbl struct {
		ColumnDefinitions json.RawMessage `json:"columnDefinitions"`
	}
	if err := json.Unmarshal(b, &tbl); err != nil {
		c.t.Fatalf("%s: %v", path, err)
	}
	return string(tbl.ColumnDefinitions)
}
