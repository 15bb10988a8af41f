package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const protoV2Accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

// gvkOf returns the x-kubernetes-group-version-kind entries of a schema.
func gvkOf(ext spec.Extensions) []map[string]any {
	var out []map[string]any
	if m, ok := ext["x-kubernetes-group-version-kind"].(map[string]any); ok {
		return []map[string]any{m}
	}
	list, _ := ext["x-kubernetes-group-version-kind"].([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func hasGVK(ext spec.Extensions, group, version, kind string) bool {
	for _, m := range gvkOf(ext) {
		if m["group"] == group && m["version"] == version && m["kind"] == kind {
			return true
		}
	}
	return false
}

func getV2(t *testing.T, e *env) *spec.Swagger {
	t.Helper()
	r := e.do("GET", "/openapi/v2", nil, "Accept", "application/json")
	if r.code != 200 {
		t.Fatalf("/openapi/v2: %d %s", r.code, r.body)
	}
	sw := &spec.Swagger{}
	if err := json.Unmarshal(r.body, sw); err != nil {
		t.Fatalf("/openapi/v2 does not parse: %v", err)
	}
	return sw
}

func getV3Index(t *testing.T, e *env) handler3.OpenAPIV3Discovery {
	t.Helper()
	r := e.do("GET", "/openapi/v3", nil)
	if r.code != 200 {
		t.Fatalf("/openapi/v3: %d %s", r.code, r.body)
	}
	var idx handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(r.body, &idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

func getV3(t *testing.T, e *env, url string) (*spec3.OpenAPI, response) {
	t.Helper()
	r := e.do("GET", url, nil, "Accept", "application/json")
	if r.code != 200 {
		t.Fatalf("%s: %d %s", url, r.code, r.body)
	}
	doc := &spec3.OpenAPI{}
	if err := json.Unmarshal(r.body, doc); err != nil {
		t.Fatalf("%s does not parse: %v", url, err)
	}
	return doc, r
}

// TestOpenAPIV2Builtins: every served built-in kind has its definition,
// named by its group-version-kind, and its paths with kube's operations.
func TestOpenAPIV2Builtins(t *testing.T) {
	e := newEnv(t)
	sw := getV2(t, e)
	if sw.Swagger != "2.0" || sw.Info.Title != "Kubernetes" || sw.Info.Version != "1.37" {
		t.Fatalf("info: %s %+v", sw.Swagger, sw.Info)
	}
	for _, r := range e.srv.reg.all() {
		if r.crd != "" {
			continue
		}
		found := false
		for _, d := range sw.Definitions {
			if hasGVK(d.Extensions, r.group, r.version, r.kind) {
				found = true
				if len(d.Properties) == 0 {
					t.Errorf("%s: definition without properties", r.kind)
				}
			}
		}
		if !found {
			t.Errorf("no definition for %s/%s %s", r.group, r.version, r.kind)
		}
		base := "/" + gvPath(r.group, r.version) + "/"
		if r.namespaced {
			base += "namespaces/{namespace}/"
		}
		verbs := r.verbs()
		coll, ok := sw.Paths.Paths[base+r.plural]
		if !ok || (coll.Post != nil) != slices.Contains(verbs, "create") || (coll.Get != nil) != slices.Contains(verbs, "list") {
			t.Errorf("%s: collection path %s without the verbs %v", r.kind, base+r.plural, verbs)
			continue
		}
		if r.virtual {
			if _, ok := sw.Paths.Paths[base+r.plural+"/{name}"]; ok != slices.Contains(verbs, "get") {
				t.Errorf("%s: item path %t with the verbs %v", r.kind, ok, verbs)
			}
			continue
		}
		item, ok := sw.Paths.Paths[base+r.plural+"/{name}"]
		if !ok || item.Get == nil || item.Put == nil || item.Patch == nil || item.Delete == nil {
			t.Errorf("%s: item path %s incomplete", r.kind, base+r.plural+"/{name}")
			continue
		}
		if !hasGVK(item.Patch.Extensions, r.group, r.version, r.kind) || item.Patch.Extensions["x-kubernetes-action"] != "patch" {
			t.Errorf("%s: patch extensions %v", r.kind, item.Patch.Extensions)
		}
		fv := false
		for _, p := range item.Patch.Parameters {
			fv = fv || p.Name == "fieldValidation"
		}
		for _, p := range coll.Parameters {
			fv = fv || p.Name == "fieldValidation"
		}
		if !fv {
			t.Errorf("%s: PATCH without fieldValidation", r.kind)
		}
		if _, ok := sw.Paths.Paths[base+r.plural+"/{name}/status"]; ok != r.hasStatus {
			t.Errorf("%s: status path %t, want %t", r.kind, ok, r.hasStatus)
		}
		if _, ok := sw.Paths.Paths[base+r.plural+"/{name}/scale"]; ok != (r.scale != nil) {
			t.Errorf("%s: scale path %t", r.kind, ok)
		}
		for _, sub := range r.subresources {
			if p := sw.Paths.Paths[base+r.plural+"/{name}/"+sub]; p.Get == nil || p.Put == nil || p.Patch == nil {
				t.Errorf("%s: %s path incomplete", r.kind, sub)
			}
		}
	}
	// Pods' fields and descriptions come from the types.
	pod := sw.Definitions["io.k8s.api.core.v1.Pod"]
	if !strings.Contains(pod.Description, "Pod is a collection of containers") {
		t.Fatalf("pod description: %q", pod.Description)
	}
	if _, ok := sw.Definitions["io.k8s.api.core.v1.Container"].Properties["image"]; !ok {
		t.Fatal("Container.image missing")
	}
	// The operations are kube's.
	if op := sw.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"].Get; op == nil || op.ID != "readCoreV1NamespacedPod" {
		t.Fatalf("read pod operation: %+v", op)
	}
}

// TestOpenAPIV2Encodings: protobuf as kubectl asks for it, ETag and 304,
// gzip.
func TestOpenAPIV2Encodings(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/openapi/v2", nil, "Accept", protoV2Accept)
	if r.code != 200 || r.hdr.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
		t.Fatalf("protobuf: %d %q", r.code, r.hdr.Get("Content-Type"))
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(r.body, doc); err != nil {
		t.Fatalf("protobuf does not parse: %v", err)
	}
	if doc.Swagger != "2.0" || len(doc.Definitions.AdditionalProperties) == 0 {
		t.Fatalf("protobuf document: %s, %d definitions", doc.Swagger, len(doc.Definitions.AdditionalProperties))
	}
	etag := r.hdr.Get("Etag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if r := e.do("GET", "/openapi/v2", nil, "Accept", protoV2Accept, "If-None-Match", etag); r.code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", r.code)
	}
	// gzip when asked for (the transport does not decompress: the header is set explicitly).
	req, _ := http.NewRequest("GET", e.url+"/openapi/v2", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil || !bytes.HasPrefix(b, []byte("{")) {
		t.Fatalf("gzip body: %v %.40q", err, b)
	}
	if r := e.do("GET", "/openapi/v2", nil, "Accept", "text/html"); r.code != http.StatusNotAcceptable {
		t.Fatalf("text/html: %d", r.code)
	}
}

// TestOpenAPIV3 checks the index, each group-version's document, and the
// caching by hash.
func TestOpenAPIV3(t *testing.T) {
	e := newEnv(t)
	idx := getV3Index(t, e)
	for _, r := range e.srv.reg.all() {
		ref, ok := idx.Paths[gvPath(r.group, r.version)]
		if !ok {
			t.Fatalf("index lacks %s", gvPath(r.group, r.version))
		}
		doc, _ := getV3(t, e, ref.ServerRelativeURL)
		found := false
		for _, s := range doc.Components.Schemas {
			found = found || hasGVK(s.Extensions, r.group, r.version, r.kind)
		}
		if !found {
			t.Errorf("%s: no schema for %s", ref.ServerRelativeURL, r.kind)
		}
	}
	ref := idx.Paths["api/v1"].ServerRelativeURL
	_, r := getV3(t, e, ref)
	if r.hdr.Get("Cache-Control") != "public, immutable" || r.hdr.Get("Expires") == "" {
		t.Fatalf("hash URL caching: %v", r.hdr)
	}
	hash := ref[strings.Index(ref, "hash=")+5:]
	if r.hdr.Get("Etag") != `"`+hash+`"` {
		t.Fatalf("ETag %s, hash %s", r.hdr.Get("Etag"), hash)
	}
	if r := e.do("GET", "/openapi/v3/api/v1", nil, "If-None-Match", r.hdr.Get("Etag")); r.code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", r.code)
	}
	// A stale hash redirects to the current one.
	req, _ := http.NewRequest("GET", e.url+"/openapi/v3/api/v1?hash=0000", nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != ref {
		t.Fatalf("stale hash: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	pods, _ := getV3(t, e, "/openapi/v3/api/v1")
	if pods.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"] == nil {
		t.Fatal("no pod path in api/v1")
	}
	if _, ok := pods.Components.Schemas["io.k8s.api.core.v1.Pod"]; !ok {
		t.Fatal("no Pod schema in api/v1")
	}
}

// TestOpenAPIV3SameOnEveryServer: the built-in documents are built from
// definitions every server of the process shares (builtinV3Definitions),
// which kube-openapi's builder writes into: a second server's documents
// hash as the first's, and in each group-version's document DeleteOptions
// and WatchEvent name only that group-version and core/v1, however many
// documents were built before it.
func TestOpenAPIV3SameOnEveryServer(t *testing.T) {
	a, b := newEnv(t), newEnv(t)
	ia, ib := getV3Index(t, a), getV3Index(t, b)
	if len(ia.Paths) != len(ib.Paths) {
		t.Fatalf("index: %d group-versions, then %d", len(ia.Paths), len(ib.Paths))
	}
	scoped := 0
	for p, ref := range ib.Paths {
		if ia.Paths[p] != ref {
			t.Errorf("%s: %s on one server, %s on the other", p, ia.Paths[p].ServerRelativeURL, ref.ServerRelativeURL)
		}
		group, version, ok := gvOfPath(p)
		if !ok {
			continue
		}
		doc, _ := getV3(t, b, ref.ServerRelativeURL)
		for _, name := range []string{"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"} {
			s := doc.Components.Schemas[name]
			if s == nil {
				continue
			}
			scoped++
			for _, gvk := range gvkOf(s.Extensions) {
				if g, v := gvk["group"], gvk["version"]; (g != group || v != version) && (g != "" || v != "v1") {
					t.Errorf("%s: %s names %s/%s", p, name, g, v)
				}
			}
		}
	}
	if scoped == 0 {
		t.Fatal("no document has DeleteOptions or WatchEvent")
	}
}

// TestOpenAPICRD: a CRD's schema appears in v2 and in its group-version's
// v3 document when it is established, changes with it, and disappears
// when it is deleted.
func TestOpenAPICRD(t *testing.T) {
	e := newEnv(t)
	before := getV2(t, e)
	if _, ok := before.Definitions["com.example.v1.Widget"]; ok {
		t.Fatal("widget before its CRD")
	}
	beforeIdx := getV3Index(t, e)
	e.must(201, "POST", crdPath, structuralWidgetCRD())
	waitFor(t, func() bool { _, ok := e.srv.reg.lookup("example.com", "v1", "widgets"); return ok })

	sw := getV2(t, e)
	w, ok := sw.Definitions["com.example.v1.Widget"]
	if !ok || !hasGVK(w.Extensions, "example.com", "v1", "Widget") {
		t.Fatalf("v2 widget: %v %v", ok, w.Extensions)
	}
	if _, ok := w.Properties["spec"].Properties["color"]; !ok {
		t.Fatalf("widget spec: %+v", w.Properties["spec"])
	}
	if _, ok := sw.Definitions["com.example.v1beta1.Widget"]; !ok {
		t.Fatal("v2 widget v1beta1 missing")
	}
	if _, ok := sw.Definitions["io.k8s.api.core.v1.Pod"]; !ok {
		t.Fatal("built-ins lost in the merge")
	}
	if sw.Paths.Paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"].Patch == nil {
		t.Fatal("widget patch path missing")
	}
	idx := getV3Index(t, e)
	ref, ok := idx.Paths["apis/example.com/v1"]
	if !ok {
		t.Fatalf("v3 index lacks the CRD: %v", idx)
	}
	if beforeIdx.Paths["api/v1"] != idx.Paths["api/v1"] {
		t.Fatal("api/v1 hash changed with a CRD")
	}
	doc, _ := getV3(t, e, ref.ServerRelativeURL)
	if s := doc.Components.Schemas["com.example.v1.Widget"]; s == nil || s.Properties["spec"].Properties["color"].Type[0] != "string" {
		t.Fatalf("v3 widget: %+v", s)
	}

	// A change of the schema is published.
	crd := e.must(200, "GET", crdPath+"/widgets.example.com", nil)
	for _, v := range path(crd, "spec", "versions").([]any) {
		props := path(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties").(map[string]any)
		props["size"] = map[string]any{"type": "integer", "description": "how big"}
	}
	e.must(200, "PUT", crdPath+"/widgets.example.com", crd)
	waitFor(t, func() bool {
		sw := getV2(t, e)
		return sw.Definitions["com.example.v1.Widget"].Properties["spec"].Properties["size"].Description == "how big"
	})
	idx2 := getV3Index(t, e)
	if idx2.Paths["apis/example.com/v1"] == ref {
		t.Fatal("v3 hash unchanged after a schema change")
	}
	doc, _ = getV3(t, e, idx2.Paths["apis/example.com/v1"].ServerRelativeURL)
	if doc.Components.Schemas["com.example.v1.Widget"].Properties["spec"].Properties["size"].Description != "how big" {
		t.Fatal("v3 not updated")
	}

	e.deleteCRD("widgets.example.com", nil)
	waitFor(t, func() bool { _, ok := e.srv.reg.lookup("example.com", "v1", "widgets"); return !ok })
	if _, ok := getV2(t, e).Definitions["com.example.v1.Widget"]; ok {
		t.Fatal("widget after its CRD was deleted")
	}
	if _, ok := getV3Index(t, e).Paths["apis/example.com/v1"]; ok {
		t.Fatal("v3 index keeps a deleted CRD")
	}
}

// TestOpenAPILazy: a server that is never asked for OpenAPI builds none;
// the first request builds, later ones are served from the cache. It logs
// the time and the heap the documents take.
func TestOpenAPILazy(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("a", nil, nil))
	if e.srv.openapi.builtinBuilt() {
		t.Fatal("built-in OpenAPI built without a request")
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	h0 := heap()
	start := time.Now()
	getV2(t, e)
	v2 := time.Since(start)
	if !e.srv.openapi.builtinBuilt() {
		t.Fatal("not built after a request")
	}
	h1 := heap()
	start = time.Now()
	e.do("GET", "/openapi/v2", nil, "Accept", protoV2Accept)
	pb := time.Since(start)
	start = time.Now()
	getV3Index(t, e)
	v3 := time.Since(start)
	h2 := heap()
	start = time.Now()
	e.do("GET", "/openapi/v2", nil, "Accept", protoV2Accept)
	again := time.Since(start)
	// Every built-in document is built once the v3 index is served (its
	// ETags hash them): the routes they were built from are dropped, and
	// the documents are still served.
	if e.srv.openapi.routes.held() {
		t.Fatal("the built-ins' routes are kept after every document was built")
	}
	// Started again, the v3 index first, with no document built yet in
	// the process: the routes go with the last v3 document, and v2 builds
	// them again and drops them.
	builtV3.Clear()
	builtinV3Definitions.mu.Lock()
	makes := builtinV3Definitions.makes
	builtinV3Definitions.mu.Unlock()
	e2 := newEnv(t)
	getV3Index(t, e2)
	if e2.srv.openapi.routes.held() {
		t.Fatal("the built-ins' routes are kept after every v3 document was built")
	}
	// The v3 definitions are made once for all the documents.
	builtinV3Definitions.mu.Lock()
	made, held := builtinV3Definitions.makes-makes, builtinV3Definitions.held > 0
	builtinV3Definitions.mu.Unlock()
	if made != 1 || held {
		t.Fatalf("the v3 definitions were made %d times for one server's documents (want 1), and kept after: %v", made, held)
	}
	if _, ok := getV2(t, e2).Definitions["io.k8s.api.core.v1.ConfigMap"]; !ok {
		t.Fatal("v2 built after the routes were dropped has no ConfigMap")
	}
	if e2.srv.openapi.routes.held() {
		t.Fatal("the built-ins' routes are kept after v2 was built")
	}
	if doc, _ := getV3(t, e, "/openapi/v3/api/v1"); doc.Paths == nil || len(doc.Paths.Paths) == 0 {
		t.Fatal("api/v1 has no paths after the routes were dropped")
	}
	// A third server in the process takes e2's documents as built: it
	// builds no routes and makes no definitions, and serves the same
	// index (the ETags hash the documents).
	e3 := newEnv(t)
	builtinV3Definitions.mu.Lock()
	makes = builtinV3Definitions.makes
	builtinV3Definitions.mu.Unlock()
	index2, index3 := getV3Index(t, e2), getV3Index(t, e3)
	builtinV3Definitions.mu.Lock()
	made = builtinV3Definitions.makes - makes
	builtinV3Definitions.mu.Unlock()
	if e3.srv.openapi.builtinBuilt() || made != 0 {
		t.Fatalf("a server built its documents again: routes built %v, definitions made %d times", e3.srv.openapi.builtinBuilt(), made)
	}
	if !reflect.DeepEqual(index2, index3) {
		t.Fatalf("two servers' v3 indexes differ:\n%v\n%v", index2, index3)
	}
	if doc, _ := getV3(t, e3, "/openapi/v3/api/v1"); doc.Paths == nil || len(doc.Paths.Paths) == 0 {
		t.Fatal("api/v1 of a server that took the built documents has no paths")
	}
	if _, ok := getV2(t, e3).Definitions["io.k8s.api.core.v1.ConfigMap"]; !ok || e3.srv.openapi.routes.held() {
		t.Fatal("v2 of a server that took the built v3 documents: no ConfigMap, or routes kept")
	}
	t.Logf("first /openapi/v2 (JSON) %v, heap +%d MiB; first protobuf %v; first /openapi/v3 (all group-versions) %v, heap +%d MiB more; cached protobuf /openapi/v2 %v",
		v2.Round(time.Millisecond), (int64(h1)-int64(h0))>>20, pb.Round(time.Millisecond), v3.Round(time.Millisecond), (int64(h2)-int64(h1))>>20, again.Round(time.Millisecond))
}

// structuralWidgetCRD is widgets.example.com, v1 and v1beta1, with a
// structural schema (no preserved unknown fields, which OpenAPI v2 drops).
func structuralWidgetCRD() map[string]any {
	crd := widgetCRD("Namespaced", "v1", "v1beta1")
	for _, v := range path(crd, "spec", "versions").([]any) {
		delete(v.(map[string]any), "selectableFields")
		v.(map[string]any)["schema"] = map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "description": "Widget is a test kind.",
			"properties": map[string]any{"spec": map[string]any{"type": "object", "description": "what a widget is",
				"properties": map[string]any{"color": map[string]any{"type": "string", "description": "its color"}}}}}}
	}
	return crd
}

// kubeSubresourcePath is a core v1 subresource path as kube-apiserver
// v1.37.2 describes it: its operation IDs by method, its query
// parameters, and the kind its operations name.
type kubeSubresourcePath struct {
	path  string
	ops   map[string]string
	query []string
	gvk   [3]string
}

// proxyOps are the operation IDs of a proxy path: one per method kube's
// ProxyRESTs connect.
func proxyOps(what string) map[string]string {
	ops := map[string]string{}
	for _, m := range []string{"Delete", "Get", "Head", "Options", "Patch", "Post", "Put"} {
		ops[strings.ToUpper(m)] = "connectCoreV1" + m + what
	}
	return ops
}

var (
	createParams = []string{"dryRun", "fieldManager", "fieldValidation", "pretty"}
	// kubeSubresourcePaths were read from a kube-apiserver v1.37.2's
	// /openapi/v2 (e2e.TestKubeOpenAPIPathsSameAsOurs compares all).
	kubeSubresourcePaths = []kubeSubresourcePath{
		{"/api/v1/namespaces/{namespace}/pods/{name}/exec",
			map[string]string{"GET": "connectCoreV1GetNamespacedPodExec", "POST": "connectCoreV1PostNamespacedPodExec"},
			[]string{"command", "container", "stderr", "stdin", "stdout", "tty"}, [3]string{"", "v1", "PodExecOptions"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/attach",
			map[string]string{"GET": "connectCoreV1GetNamespacedPodAttach", "POST": "connectCoreV1PostNamespacedPodAttach"},
			[]string{"container", "stderr", "stdin", "stdout", "tty"}, [3]string{"", "v1", "PodAttachOptions"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/portforward",
			map[string]string{"GET": "connectCoreV1GetNamespacedPodPortforward", "POST": "connectCoreV1PostNamespacedPodPortforward"},
			[]string{"ports"}, [3]string{"", "v1", "PodPortForwardOptions"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/proxy", proxyOps("NamespacedPodProxy"),
			[]string{"path"}, [3]string{"", "v1", "PodProxyOptions"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}", proxyOps("NamespacedPodProxyWithPath"),
			[]string{"path"}, [3]string{"", "v1", "PodProxyOptions"}},
		{"/api/v1/namespaces/{namespace}/services/{name}/proxy", proxyOps("NamespacedServiceProxy"),
			[]string{"path"}, [3]string{"", "v1", "ServiceProxyOptions"}},
		{"/api/v1/namespaces/{namespace}/services/{name}/proxy/{path}", proxyOps("NamespacedServiceProxyWithPath"),
			[]string{"path"}, [3]string{"", "v1", "ServiceProxyOptions"}},
		{"/api/v1/nodes/{name}/proxy", proxyOps("NodeProxy"),
			[]string{"path"}, [3]string{"", "v1", "NodeProxyOptions"}},
		{"/api/v1/nodes/{name}/proxy/{path}", proxyOps("NodeProxyWithPath"),
			[]string{"path"}, [3]string{"", "v1", "NodeProxyOptions"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/log", map[string]string{"GET": "readCoreV1NamespacedPodLog"},
			[]string{"container", "follow", "insecureSkipTLSVerifyBackend", "limitBytes", "pretty", "previous", "sinceSeconds", "stream", "tailLines", "timestamps"},
			[3]string{"", "v1", "Pod"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/binding", map[string]string{"POST": "createCoreV1NamespacedPodBinding"},
			createParams, [3]string{"", "v1", "Binding"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/eviction", map[string]string{"POST": "createCoreV1NamespacedPodEviction"},
			createParams, [3]string{"policy", "v1", "Eviction"}},
	}
	tokenPath = kubeSubresourcePath{"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
		map[string]string{"POST": "createCoreV1NamespacedServiceAccountToken"},
		createParams, [3]string{"authentication.k8s.io", "v1", "TokenRequest"}}
)

// TestOpenAPIKubeSubresources: /openapi/v2 and /openapi/v3/api/v1 have
// the connect subresources, pods/log and the create-only subresources of
// core v1 with kube's operations, parameters and answers;
// serviceaccounts/token only when tokens are served.
func TestOpenAPIKubeSubresources(t *testing.T) {
	for _, tokens := range []bool{true, false} {
		var opts []envOption
		if tokens {
			opts = append(opts, withServiceAccountTokens(t))
		}
		e := newEnv(t, opts...)
		sw := getV2(t, e)
		doc, _ := getV3(t, e, "/openapi/v3/api/v1")
		for _, want := range kubeSubresourcePaths {
			checkV2Subresource(t, sw, want)
			checkV3Subresource(t, doc, want)
		}
		_, v2 := sw.Paths.Paths[tokenPath.path]
		_, v3 := doc.Paths.Paths[tokenPath.path]
		if v2 != tokens || v3 != tokens {
			t.Errorf("tokens %t: token path in v2 %t, in v3 %t", tokens, v2, v3)
		}
		if tokens {
			checkV2Subresource(t, sw, tokenPath)
			checkV3Subresource(t, doc, tokenPath)
		}
	}
}

func checkV2Subresource(t *testing.T, sw *spec.Swagger, want kubeSubresourcePath) {
	t.Helper()
	item, ok := sw.Paths.Paths[want.path]
	if !ok {
		t.Errorf("v2: no %s", want.path)
		return
	}
	ops := map[string]*spec.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch,
		"DELETE": item.Delete, "HEAD": item.Head, "OPTIONS": item.Options}
	for m, op := range ops {
		if op == nil {
			if want.ops[m] != "" {
				t.Errorf("v2 %s: no %s", want.path, m)
			}
			continue
		}
		if op.ID != want.ops[m] {
			t.Errorf("v2 %s %s: operation %q, want %q", want.path, m, op.ID, want.ops[m])
		}
		if !hasGVK(op.Extensions, want.gvk[0], want.gvk[1], want.gvk[2]) {
			t.Errorf("v2 %s %s: kind %v, want %v", want.path, m, op.Extensions["x-kubernetes-group-version-kind"], want.gvk)
		}
		checkV2Answer(t, want, m, op)
	}
	var query []string
	for _, p := range item.Parameters {
		if ref := p.Ref.String(); ref != "" {
			p = sw.Parameters[strings.TrimPrefix(ref, "#/parameters/")]
		}
		if p.In == "query" {
			query = append(query, p.Name)
		}
	}
	if !slices.Equal(query, want.query) {
		t.Errorf("v2 %s: query parameters %v, want %v", want.path, query, want.query)
	}
}

// checkV2Answer: connect operations produce anything as a string, as kube
// documents a stream; pods/log produces text/plain first, also a string.
func checkV2Answer(t *testing.T, want kubeSubresourcePath, method string, op *spec.Operation) {
	t.Helper()
	ok := op.Responses.StatusCodeResponses[200]
	switch action := op.Extensions["x-kubernetes-action"]; {
	case strings.HasPrefix(op.ID, "connect"):
		if action != "connect" || !slices.Equal(op.Produces, []string{"*/*"}) || !ok.Schema.Type.Contains("string") {
			t.Errorf("v2 %s %s: action %v, produces %v, 200 %+v", want.path, method, action, op.Produces, ok.Schema)
		}
	case strings.HasSuffix(want.path, "/log"):
		if action != "get" || len(op.Produces) == 0 || op.Produces[0] != "text/plain" || !ok.Schema.Type.Contains("string") {
			t.Errorf("v2 %s %s: action %v, produces %v, 200 %+v", want.path, method, action, op.Produces, ok.Schema)
		}
	default:
		if action != "post" || op.Responses.StatusCodeResponses[201].Schema == nil {
			t.Errorf("v2 %s %s: action %v, 201 %+v", want.path, method, action, op.Responses.StatusCodeResponses[201])
		}
	}
}

func checkV3Subresource(t *testing.T, doc *spec3.OpenAPI, want kubeSubresourcePath) {
	t.Helper()
	item, ok := doc.Paths.Paths[want.path]
	if !ok {
		t.Errorf("v3: no %s", want.path)
		return
	}
	ops := map[string]*spec3.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch,
		"DELETE": item.Delete, "HEAD": item.Head, "OPTIONS": item.Options}
	for m, op := range ops {
		if op == nil {
			if want.ops[m] != "" {
				t.Errorf("v3 %s: no %s", want.path, m)
			}
			continue
		}
		if op.OperationId != want.ops[m] {
			t.Errorf("v3 %s %s: operation %q, want %q", want.path, m, op.OperationId, want.ops[m])
		}
		if strings.HasSuffix(want.path, "/log") {
			if _, ok := op.Responses.StatusCodeResponses[200].Content["text/plain"]; !ok {
				t.Errorf("v3 %s: no text/plain answer", want.path)
			}
		}
	}
	var query []string
	for _, p := range item.Parameters {
		if p.In == "query" {
			query = append(query, p.Name)
		}
	}
	if !slices.Equal(query, want.query) {
		t.Errorf("v3 %s: query parameters %v, want %v", want.path, query, want.query)
	}
}
