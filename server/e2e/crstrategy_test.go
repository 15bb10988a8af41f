package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
)

// The custom resource rules of kube's apiextensions server — generation,
// the status subresource's resets and the scale subresource — seen by a
// client: the same script runs against listwatch and, when it is built,
// a real kube-apiserver, and the two transcripts must be the same.

const crGroup = "scaletest.example.com"

func crCRD(plural, kind string, subresources string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"` + plural + `.` + crGroup + `"},
		"spec":{"group":"` + crGroup + `","scope":"Namespaced",
		"names":{"plural":"` + plural + `","singular":"` + strings.ToLower(kind) + `","kind":"` + kind + `"},
		"versions":[{"name":"v1","served":true,"storage":true,` + subresources + `
		"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
}

const scaleSubresources = `"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}},`

// rawClient sends requests to one server and records what the script
// compares: codes, messages and chosen fields, never server-chosen values
// (uids, resourceVersions, timestamps).
type rawClient struct {
	t    *testing.T
	host string
	hc   *http.Client
	log  []string
}

func newRawClient(t *testing.T, cfg *rest.Config) *rawClient {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rawClient{t: t, host: strings.TrimSuffix(cfg.Host, "/"), hc: hc}
}

func (c *rawClient) do(method, path, ctype, body string) (int, map[string]any) {
	c.t.Helper()
	code, _, b := c.send(method, path, ctype, "application/json", body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return code, m
}

// send sends one request (ctype and accept, when not empty, its
// Content-Type and Accept) and reads the whole answer.
func (c *rawClient) send(method, path, ctype, accept, body string) (int, http.Header, []byte) {
	c.t.Helper()
	hdr := http.Header{}
	if ctype != "" {
		hdr.Set("Content-Type", ctype)
	}
	if accept != "" {
		hdr.Set("Accept", accept)
	}
	return c.sendWith(method, path, hdr, body)
}

// sendWith sends one request with the headers hdr and reads the whole
// answer.
func (c *rawClient) sendWith(method, path string, hdr http.Header, body string) (int, http.Header, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	// Not the test's context: the script's cleanups send requests too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
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
	return resp.StatusCode, resp.Header, b
}

// step sends a request and records its code and, for a Status, its
// reason and message, or else the fields named.
func (c *rawClient) step(name, method, path, ctype, body string, fields ...string) map[string]any {
	c.t.Helper()
	code, m := c.do(method, path, ctype, body)
	line := fmt.Sprintf("%s: %d", name, code)
	if m["kind"] == "Status" {
		line += fmt.Sprintf(" %v %q", m["reason"], m["message"])
		if code == http.StatusUnsupportedMediaType {
			line = fmt.Sprintf("%s: %d %v", name, code, m["reason"])
		}
	} else {
		for _, f := range fields {
			line += fmt.Sprintf(" %s=%s", f, jsonAt(m, f))
		}
	}
	c.log = append(c.log, line)
	return m
}

// jsonAt is the JSON of the field at dotted path p of m ("-" if absent).
func jsonAt(m map[string]any, p string) string {
	var cur any = m
	for _, k := range strings.Split(p, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "-"
		}
		if cur, ok = mm[k]; !ok {
			return "-"
		}
	}
	b, _ := json.Marshal(cur)
	return string(b)
}

// managers records the object's field managers: manager, operation,
// subresource and apiVersion of each managedFields entry, in order (not
// their times).
func (c *rawClient) managers(name, path string) {
	c.t.Helper()
	code, m := c.do("GET", path, "", "")
	md, _ := m["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	var set []string
	for _, e := range entries {
		e := e.(map[string]any)
		set = append(set, fmt.Sprintf("%v/%v/%v/%v", e["manager"], e["operation"], e["subresource"], e["apiVersion"]))
	}
	// As a set: kube's field manager orders an operation's entries by
	// their times in whole seconds, so their order depends on whether a
	// second began between two writes.
	slices.Sort(set)
	c.log = append(c.log, fmt.Sprintf("%s: %d %s", name, code, strings.Join(set, " ")))
}

// waitServed polls until the CRD's resource is listed (its CRD is
// established and served).
func (c *rawClient) waitServed(plural string) {
	c.t.Helper()
	c.waitOK("/apis/" + crGroup + "/v1/namespaces/default/" + plural)
}

// waitOK polls until a GET of path answers 200 (a new CRD's resource is
// served).
func (c *rawClient) waitOK(path string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := c.do("GET", path, "", "")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s%s not served: %d", c.host, path, code)
		}
		time.Sleep(50 * time.Millisecond) // polling for an asynchronous condition
	}
}

const (
	mergePatch = "application/merge-patch+json"
	jsonPatch  = "application/json-patch+json"
	jsonCT     = "application/json"
)

// crScript is the script both servers run.
func crScript(c *rawClient) []string {
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	c.step("crd with status and scale", "POST", crds, jsonCT, crCRD("widgets", "Widget", scaleSubresources))
	c.t.Cleanup(func() { c.do("DELETE", crds+"/widgets."+crGroup, "", "") })
	c.step("crd without subresources", "POST", crds, jsonCT, crCRD("gizmos", "Gizmo", ""))
	c.t.Cleanup(func() { c.do("DELETE", crds+"/gizmos."+crGroup, "", "") })
	c.step("crd with a bad specReplicasPath", "POST", crds, jsonCT, crCRD("bads", "Bad",
		`"subresources":{"scale":{"specReplicasPath":".foo.replicas","statusReplicasPath":"status.replicas"}},`))
	c.waitServed("widgets")
	c.waitServed("gizmos")

	disc := c.step("discovery", "GET", "/apis/"+crGroup+"/v1", "", "")
	for _, r := range disc["resources"].([]any) {
		r := r.(map[string]any)
		if r["name"] == "widgets/scale" {
			c.log = append(c.log, fmt.Sprintf("widgets/scale: %v %v %v %v %v", r["group"], r["version"], r["kind"], r["namespaced"], r["verbs"]))
		}
	}

	w := "/apis/" + crGroup + "/v1/namespaces/default/widgets"
	fields := []string{"metadata.generation", "metadata.labels", "spec", "status"}
	c.step("create with status", "POST", w, jsonCT,
		`{"apiVersion":"`+crGroup+`/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":1,"color":"red"},"status":{"replicas":9}}`, fields...)
	c.step("label", "PATCH", w+"/w", mergePatch, `{"metadata":{"labels":{"a":"b"}}}`, fields...)
	c.step("main write of status", "PATCH", w+"/w", mergePatch, `{"status":{"replicas":5}}`, fields...)
	c.step("status write", "PATCH", w+"/w/status", mergePatch,
		`{"metadata":{"labels":{"c":"d"}},"spec":{"color":"blue"},"status":{"replicas":1,"selector":"app=w"}}`, fields...)
	c.step("spec write", "PATCH", w+"/w", mergePatch, `{"spec":{"color":"green"},"status":{"replicas":7}}`, fields...)
	c.step("status replicas invalid", "PATCH", w+"/w/status", mergePatch, `{"status":{"replicas":-2}}`)
	c.step("selector invalid", "PATCH", w+"/w/status", mergePatch, `{"status":{"selector":3.5}}`)

	scaleFields := []string{"apiVersion", "kind", "metadata.name", "metadata.namespace", "spec", "status"}
	c.step("get scale", "GET", w+"/w/scale", "", "", scaleFields...)
	c.step("scale merge patch", "PATCH", w+"/w/scale", mergePatch, `{"spec":{"replicas":3}}`, scaleFields...)
	c.step("scale json patch", "PATCH", w+"/w/scale", jsonPatch, `[{"op":"replace","path":"/spec/replicas","value":4}]`, scaleFields...)
	const applyCT = "application/apply-patch+yaml"
	scaleApply := func(n int) string {
		return fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w","namespace":"default"},"spec":{"replicas":%d}}`, n)
	}
	c.step("scale apply", "PATCH", w+"/w/scale?fieldManager=scaler", applyCT, scaleApply(5), scaleFields...)
	c.step("scale apply again", "PATCH", w+"/w/scale?fieldManager=scaler", applyCT, scaleApply(5), scaleFields...)
	c.step("scale apply by another", "PATCH", w+"/w/scale?fieldManager=other", applyCT, scaleApply(2), scaleFields...)
	c.step("scale apply forced", "PATCH", w+"/w/scale?fieldManager=other&force=true", applyCT, scaleApply(2), scaleFields...)
	c.step("scale apply of the replicas it has", "PATCH", w+"/w/scale?fieldManager=other", applyCT, scaleApply(4), scaleFields...)
	c.step("scale apply without a manager", "PATCH", w+"/w/scale", applyCT, scaleApply(2), scaleFields...)
	c.step("scale apply of another kind", "PATCH", w+"/w/scale?fieldManager=scaler", applyCT,
		`{"apiVersion":"`+crGroup+`/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":5}}`, scaleFields...)
	c.step("scale apply unknown field", "PATCH", w+"/w/scale?fieldManager=scaler&fieldValidation=Strict", applyCT,
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w","namespace":"default"},"spec":{"replicas":2,"extra":1}}`, scaleFields...)
	c.managers("managers after scale applies", w+"/w")
	c.step("after scaling", "GET", w+"/w", "", "", fields...)
	c.step("scale put stale", "PUT", w+"/w/scale", jsonCT,
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w","namespace":"default","resourceVersion":"1"},"spec":{"replicas":6}}`)
	c.step("scale put", "PUT", w+"/w/scale", jsonCT,
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w","namespace":"default"},"spec":{"replicas":6},"status":{"replicas":100}}`, scaleFields...)
	c.step("scale put other name", "PUT", w+"/w/scale", jsonCT,
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"x"},"spec":{"replicas":6}}`)
	c.step("scale negative", "PATCH", w+"/w/scale", mergePatch, `{"spec":{"replicas":-1}}`)
	c.step("scale too big", "PATCH", w+"/w", mergePatch, `{"spec":{"replicas":3000000000}}`)
	c.step("scale strategic", "PATCH", w+"/w/scale", "application/strategic-merge-patch+json", `{"spec":{"replicas":1}}`)
	c.step("delete scale", "DELETE", w+"/w/scale", "", "")
	c.step("replicas not an integer", "POST", w, jsonCT,
		`{"apiVersion":"`+crGroup+`/v1","kind":"Widget","metadata":{"name":"bad"},"spec":{"replicas":"two"}}`)
	c.step("no replicas", "POST", w, jsonCT, `{"apiVersion":"`+crGroup+`/v1","kind":"Widget","metadata":{"name":"empty"},"spec":{}}`, fields...)
	c.step("get scale without replicas", "GET", w+"/empty/scale", "", "")
	c.step("patch scale without replicas", "PATCH", w+"/empty/scale", mergePatch, `{"metadata":{"labels":{"a":"b"}}}`)
	c.step("patch scale sets replicas", "PATCH", w+"/empty/scale", mergePatch, `{"spec":{"replicas":2}}`, scaleFields...)
	c.step("scale of a missing object", "GET", w+"/nope/scale", "", "")

	g := "/apis/" + crGroup + "/v1/namespaces/default/gizmos"
	c.step("gizmo create with status", "POST", g, jsonCT,
		`{"apiVersion":"`+crGroup+`/v1","kind":"Gizmo","metadata":{"name":"g"},"spec":{"size":1},"status":{"phase":"New"}}`, fields...)
	c.step("gizmo status change", "PATCH", g+"/g", mergePatch, `{"status":{"phase":"Ready"}}`, fields...)
	c.step("gizmo label", "PATCH", g+"/g", mergePatch, `{"metadata":{"labels":{"a":"b"}}}`, fields...)
	cur := c.step("gizmo get", "GET", g+"/g", "", "", fields...)
	rv := jsonAt(cur, "metadata.resourceVersion")
	c.step("gizmo 1 to 1.0", "PUT", g+"/g", jsonCT,
		`{"apiVersion":"`+crGroup+`/v1","kind":"Gizmo","metadata":{"name":"g","resourceVersion":`+rv+`,"labels":{"a":"b"}},"spec":{"size":1.0},"status":{"phase":"Ready"}}`,
		fields...)
	c.step("gizmo has no scale", "GET", g+"/g/scale", "", "")
	return c.log
}

// TestCustomResourceRulesLikeKube runs crScript against listwatch and, if
// built, kube-apiserver, and compares the transcripts.
func TestCustomResourceRulesLikeKube(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	ours := crScript(newRawClient(t, restConfig(t, s)))
	t.Logf("listwatch transcript:\n%s", strings.Join(ours, "\n"))
	for _, want := range []string{
		"create with status: 201 metadata.generation=1 metadata.labels=- spec={\"color\":\"red\",\"replicas\":1} status=-",
		"gizmo status change: 200 metadata.generation=2",
		"widgets/scale: autoscaling v1 Scale true [get patch update]",
		`scale negative: 422 Invalid "Widget.scaletest.example.com \"w\" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer"`,
	} {
		found := false
		for _, l := range ours {
			if strings.HasPrefix(l, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("listwatch transcript lacks %q:\n%s", want, strings.Join(ours, "\n"))
		}
	}
	if testing.Short() {
		return
	}
	compareLogs(t, ours, crScript(newRawClient(t, kubeRESTConfig(t))))
}

// TestKubectlScaleCustomResource: kubectl scale, and client-go's dynamic
// and scale clients, on a custom resource with the scale subresource.
func TestKubectlScaleCustomResource(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	kubectl(t, s, crCRD("widgets", "Widget", scaleSubresources), "create", "-f", "-")
	kubectl(t, s, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/widgets."+crGroup)
	kubectl(t, s, `{"apiVersion":"`+crGroup+`/v1","kind":"Widget","metadata":{"name":"foo"},"spec":{"replicas":1},"status":{"replicas":8}}`, "create", "-f", "-")

	if out := kubectl(t, s, "", "scale", "--replicas=3", "widget/foo"); !strings.Contains(out, "widget."+crGroup+"/foo scaled") {
		t.Fatalf("kubectl scale: %s", out)
	}
	if out := kubectl(t, s, "", "get", "widget", "foo", "-o", "jsonpath={.spec.replicas}/{.metadata.generation}/{.status}"); out != "3/2/" {
		t.Fatalf("after kubectl scale: %q (want replicas 3, generation 2, no status)", out)
	}
	// --current-replicas is a precondition kubectl checks on the Scale.
	if out, err := kubectlErr(t, s, "", "scale", "--current-replicas=2", "--replicas=5", "widget/foo"); err == nil ||
		!strings.Contains(out, "Expected replicas to be 2, was 3") {
		t.Fatalf("kubectl scale with a wrong --current-replicas: %v %s", err, out)
	}
	kubectl(t, s, "", "scale", "--current-replicas=3", "--replicas=5", "widget/foo")

	cfg := restConfig(t, s)
	ctx := t.Context()
	gvr := schema.GroupVersionResource{Group: crGroup, Version: "v1", Resource: "widgets"}
	dyn := dynamic.NewForConfigOrDie(cfg).Resource(gvr).Namespace("default")
	st, err := dyn.Patch(ctx, "foo", types.MergePatchType, []byte(`{"status":{"replicas":5,"selector":"app=foo"}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if st.GetGeneration() != 3 {
		t.Fatalf("generation after a status write: %d, want 3", st.GetGeneration())
	}
	u, err := dyn.Get(ctx, "foo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "blue", "spec", "color"); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, int64(0), "status", "replicas")
	u, err = dyn.Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas"); r != 5 || u.GetGeneration() != 4 {
		t.Fatalf("update: status.replicas %d generation %d, want 5 and 4", r, u.GetGeneration())
	}

	// client-go's scale client finds the Scale kind through discovery.
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	sc, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	if err != nil {
		t.Fatal(err)
	}
	got, err := sc.Scales("default").Get(ctx, gvr.GroupResource(), "foo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas != 5 || got.Status.Replicas != 5 || got.Status.Selector != "app=foo" {
		t.Fatalf("scale client Get: %+v", got)
	}
	got.Spec.Replicas = 7
	upd, err := sc.Scales("default").Update(ctx, gvr.GroupResource(), got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Spec.Replicas != 7 {
		t.Fatalf("scale client Update: %+v", upd)
	}
	if _, err := sc.Scales("default").Update(ctx, gvr.GroupResource(), got, metav1.UpdateOptions{}); err == nil {
		t.Fatal("update with a stale resourceVersion succeeded")
	}
	p, err := sc.Scales("default").Patch(ctx, gvr, "foo", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Replicas != 2 {
		t.Fatalf("scale client Patch: %+v", p)
	}
}
