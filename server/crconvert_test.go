package server

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// gizmoHook is a conversion webhook for gizmos: v1 has spec.color, v2
// (the storage version) spec.paint.color. It counts the reviews and the
// objects it converts, by desired apiVersion, and fails while failing is
// set.
type gizmoHook struct {
	srv     *httptest.Server
	failing atomic.Bool
	mu      sync.Mutex
	reviews map[string]int
	objects map[string]int
}

func newGizmoHook(t *testing.T) *gizmoHook {
	h := &gizmoHook{reviews: map[string]int{}, objects: map[string]int{}}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *gizmoHook) serve(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	h.mu.Lock()
	h.reviews[req.DesiredAPIVersion]++
	h.objects[req.DesiredAPIVersion] += len(req.Objects)
	h.mu.Unlock()
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	if h.failing.Load() {
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "conversion refused"}
	} else {
		for _, raw := range req.Objects {
			var obj map[string]any
			if err := json.Unmarshal(raw.Raw, &obj); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			spec, _ := obj["spec"].(map[string]any)
			if spec == nil {
				spec = map[string]any{}
			}
			switch req.DesiredAPIVersion {
			case "example.com/v2":
				spec["paint"] = map[string]any{"color": spec["color"]}
				delete(spec, "color")
			case "example.com/v1":
				if paint, ok := spec["paint"].(map[string]any); ok {
					spec["color"] = paint["color"]
				}
				delete(spec, "paint")
			}
			obj["spec"] = spec
			obj["apiVersion"] = req.DesiredAPIVersion
			b, _ := json.Marshal(obj)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
		}
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// counts are the reviews and objects sent so far for apiVersion.
func (h *gizmoHook) counts(apiVersion string) (reviews, objects int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reviews[apiVersion], h.objects[apiVersion]
}

func gizmoCRD(h *gizmoHook) map[string]any {
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw}))
	version := func(v string, storage bool) map[string]any {
		return map[string]any{"name": v, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gizmos.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
			"versions": []any{version("v1", false), version("v2", true)},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig":             map[string]any{"url": h.srv.URL + "/convert", "caBundle": ca},
			}},
		},
	}
}

func gizmo(name, version, color string) map[string]any {
	spec := map[string]any{"color": color}
	if version == "v2" {
		spec = map[string]any{"paint": map[string]any{"color": color}}
	}
	return map[string]any{"apiVersion": "example.com/" + version, "kind": "Gizmo",
		"metadata": map[string]any{"name": name}, "spec": spec}
}

// TestCRConversionWebhook: objects of a CRD with a conversion webhook are
// stored in its storage version and served in the version asked for,
// converted by the webhook: once per object revision and version however
// often it is read, a list's objects in one review; a failing webhook is
// the client's 500, and ends a watch with an error event.
func TestCRConversionWebhook(t *testing.T) {
	h := newGizmoHook(t)
	e := newEnv(t)
	e.must(201, "POST", crdPath, gizmoCRD(h))
	v1 := "/apis/example.com/v1/namespaces/default/gizmos"
	v2 := "/apis/example.com/v2/namespaces/default/gizmos"

	// A create in v1 is stored in v2, and answered in v1.
	a := e.must(201, "POST", v1, gizmo("a", "v1", "red"))
	if a["apiVersion"] != "example.com/v1" || path(a, "spec", "color") != "red" || path(a, "spec", "paint") != nil {
		t.Fatalf("create answer: %v", a)
	}
	kv, err := e.store.Get(t.Context(), "/registry/example.com/gizmos/default/a")
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(kv.Value, &stored); err != nil {
		t.Fatal(err)
	}
	if stored["apiVersion"] != "example.com/v2" || path(stored, "spec", "paint", "color") != "red" {
		t.Fatalf("stored: %s", kv.Value)
	}
	if r, _ := h.counts("example.com/v2"); r != 1 {
		t.Fatalf("reviews to v2 after a create: %d, want 1", r)
	}

	// A GET converts what it reads each time, as kube's; lists and
	// watches of one revision convert it once.
	r0, _ := h.counts("example.com/v1")
	for range 3 {
		if g := e.must(200, "GET", v1+"/a", nil); path(g, "spec", "color") != "red" {
			t.Fatalf("get v1: %v", g)
		}
	}
	if g := e.must(200, "GET", v2+"/a", nil); path(g, "spec", "paint", "color") != "red" {
		t.Fatalf("get v2: %v", g)
	}
	if r, _ := h.counts("example.com/v1"); r-r0 != 3 {
		t.Fatalf("3 gets: %d reviews, want 3", r-r0)
	}
	for range 2 {
		e.must(200, "GET", v1, nil)
	}
	if r, _ := h.counts("example.com/v1"); r-r0 != 3 {
		// The create's answer converted this revision already.
		t.Fatalf("2 lists of one object: %d reviews, want none", r-r0-3)
	}

	// A list's objects not yet converted go in one review.
	for _, n := range []string{"b", "c", "d"} {
		e.must(201, "POST", v2, gizmo(n, "v2", "blue"))
	}
	r0, o0 := h.counts("example.com/v1")
	l := e.must(200, "GET", v1, nil)
	items := l["items"].([]any)
	if len(items) != 4 {
		t.Fatalf("list: %d items", len(items))
	}
	for _, it := range items {
		if it.(map[string]any)["apiVersion"] != "example.com/v1" || path(it.(map[string]any), "spec", "color") == nil {
			t.Fatalf("list item: %v", it)
		}
	}
	if r, o := h.counts("example.com/v1"); r-r0 != 1 || o-o0 != 3 { // a is converted already
		t.Fatalf("list: %d reviews of %d objects, want 1 of 3", r-r0, o-o0)
	}

	// An update in v1 that changes nothing writes nothing.
	cur := e.must(200, "GET", v1+"/a", nil)
	same := e.must(200, "PUT", v1+"/a", cur)
	if path(same, "metadata", "resourceVersion") != path(cur, "metadata", "resourceVersion") {
		t.Fatalf("no-op update wrote: %v -> %v", path(cur, "metadata", "resourceVersion"), path(same, "metadata", "resourceVersion"))
	}

	// A dry run's answer, in the stored revision's resourceVersion, is
	// not taken for that revision's conversion, which the memo holds.
	if d := e.must(200, "PATCH", v1+"/a?dryRun=All", `{"spec":{"color":"purple"}}`, "Content-Type", "application/merge-patch+json"); path(d, "spec", "color") != "purple" {
		t.Fatalf("dry run: %v", d)
	}

	// Watchers of v1 share one conversion of each event.
	rv := path(l, "metadata", "resourceVersion").(string)
	w1 := e.watch(v1 + "?watch=1&resourceVersion=" + rv)
	w2 := e.watch(v1 + "?watch=1&resourceVersion=" + rv)
	r0, _ = h.counts("example.com/v1")
	e.must(200, "PATCH", v2+"/b", `{"spec":{"paint":{"color":"green"}}}`, "Content-Type", "application/merge-patch+json")
	for _, w := range []*watchStream{w1, w2} {
		if ev := w.expect("MODIFIED", "b"); ev.Object["apiVersion"] != "example.com/v1" || path(ev.Object, "spec", "color") != "green" {
			t.Fatalf("event: %v", ev.Object)
		}
	}
	if r, _ := h.counts("example.com/v1"); r-r0 != 1 {
		t.Fatalf("two watchers of one event: %d reviews, want 1", r-r0)
	}

	// Failing, answered as kube-apiserver answers: a write that needs a
	// conversion is a 500 with the converter's error; a GET a 500 naming
	// the object as corrupt; a list whose objects were not converted
	// before a StorageReadError, one cause each; a watch ends with an
	// error event. What a list or watch converted before is still served.
	h.failing.Store(true)
	if m := e.must(500, "POST", v1, gizmo("e", "v1", "red")); m["kind"] != "Status" || m["reason"] != nil ||
		m["message"] != "conversion webhook for example.com/v1, Kind=Gizmo failed: conversion refused" {
		t.Fatalf("create while failing: %v", m)
	}
	if g := e.must(200, "GET", v1, nil); len(g["items"].([]any)) != 4 {
		t.Fatalf("list of objects converted before: %v", g)
	}
	e.must(200, "PATCH", v2+"/c", `{"spec":{"paint":{"color":"black"}}}`, "Content-Type", "application/merge-patch+json")
	e.must(200, "PATCH", v2+"/d", `{"spec":{"paint":{"color":"black"}}}`, "Content-Type", "application/merge-patch+json")
	c := e.must(200, "GET", v2+"/c", nil)
	rev := path(c, "metadata", "resourceVersion").(string)
	e.expectStatus(500, "InternalError", "Internal error occurred: StorageError: corrupt object, Code: 7, Key: /example.com/gizmos/default/c, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision="+rev+": conversion webhook for example.com/v2, Kind=Gizmo failed: conversion refused", "GET", v1+"/c", nil)
	// kube's list then reads storage, where every object fails: named in
	// key order, the first in the message.
	aRev := path(e.must(200, "GET", v2+"/a", nil), "metadata", "resourceVersion").(string)
	st := e.expectStatus(500, "StorageReadError", "failed to read one or more gizmos.example.com from the storage: StorageError: corrupt object, Code: 7, Key: /registry/example.com/gizmos/default/a, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision="+aRev+": conversion webhook for example.com/v2, Kind=Gizmo failed: conversion refused (and 3 more)", "GET", v1, nil)
	if causes := path(st, "details", "causes").([]any); len(causes) != 4 || path(causes[3].(map[string]any), "field") != "/registry/example.com/gizmos/default/d" {
		t.Fatalf("causes: %v", causes)
	}
	// A delete reads the object afresh, as kube's store: refused, and the
	// object stays, though lists remembered it converted.
	m := e.must(500, "DELETE", v1+"/a", nil)
	if msg, _ := m["message"].(string); !strings.Contains(msg, "Key: /example.com/gizmos/default/a,") {
		t.Fatalf("delete while failing: %v", m)
	}
	e.must(200, "GET", v2+"/a", nil)
	if ev, ok := w1.next(); !ok || ev.Type != "ERROR" || ev.Object["code"] != float64(500) ||
		!strings.Contains(ev.Object["message"].(string), "conversion refused") {
		t.Fatalf("watch after a failed conversion: %v %v", ev, ok)
	}
	h.failing.Store(false)
	if g := e.must(200, "GET", v1+"/c", nil); path(g, "spec", "color") != "black" {
		t.Fatalf("after the webhook is back: %v", g)
	}
	// A collection's delete answers the objects in the request's version.
	del := e.must(200, "DELETE", v1+"?fieldSelector=metadata.name%3Dc", nil)
	if items := del["items"].([]any); len(items) != 1 || path(items[0].(map[string]any), "spec", "color") != "black" {
		t.Fatalf("delete collection: %v", del)
	}

	// The CRD's converter, and what it remembers, go with the CRD.
	converter := func() bool {
		e.srv.convMu.Lock()
		defer e.srv.convMu.Unlock()
		_, ok := e.srv.convs["gizmos.example.com"]
		return ok
	}
	if !converter() {
		t.Fatal("no converter while the CRD is served")
	}
	e.deleteCRD("gizmos.example.com", nil)
	e.expectNoRoute("GET", v1)
	if converter() {
		t.Fatal("the converter outlived its CRD")
	}
}

// FuzzValueAPIVersion: the apiVersion read from the front of a value, as
// the server encodes values (doc.encode, apiVersion first), is the one a
// JSON decode reads; any other bytes do not make it panic.
func FuzzValueAPIVersion(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"example.com/v1","kind":"Gizmo"}`,
		`{"kind":"Gizmo","apiVersion":"example.com/v2"}`,
		`{"apiVersion":"a\"b","kind":"K"}`,
		`{"apiVersion":"x\u0041y"}`,
		`{"apiVersion":"v1","apiVersion":"v2"}`,
		`{"apiVersion":1}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valueAPIVersion(b)
		d, err := decodeDoc(b)
		if err != nil {
			return
		}
		value := d.encode()
		var m map[string]any // keys as they are (a struct's match any case)
		if err := json.Unmarshal(value, &m); err != nil {
			t.Fatalf("encoded %q: %v", value, err)
		}
		want, _ := m["apiVersion"].(string)
		if got := valueAPIVersion(value); got != want {
			t.Fatalf("valueAPIVersion(%q) = %q, json reads %q", value, got, want)
		}
	})
}

// TestCRMultiVersionReadsAsKubes: a CRD whose versions' schemas differ,
// v1 stored (defaulting spec.e), v2 served (defaulting spec.c, which a
// transition rule lets change only from nothing), under conversion None
// and under a webhook that keeps these fields. As kube's storage decoder
// reads a stored object through v2, it is defaulted by v1's schema (the
// webhook sees that) and pruned by v2's, without v2's defaults: so a GET,
// a list, a create's answer, and the oldSelf of an update or patch through
// v2 have e and not c. A dry-run create through v2 naming a
// resourceVersion is answered as read back from v1 with that
// resourceVersion, as kube's dry-run storage copies it.
func TestCRMultiVersionReadsAsKubes(t *testing.T) {
	h := newGizmoHook(t)
	for _, strategy := range []string{"None", "Webhook"} {
		t.Run(strategy, func(t *testing.T) {
			e := newEnv(t)
			crd := gizmoCRD(h)
			spec := crd["spec"].(map[string]any)
			if strategy == "None" {
				delete(spec, "conversion")
			}
			version := func(name string, storage bool, props, extra string) map[string]any {
				var s any
				if err := json.Unmarshal([]byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{`+props+`}`+extra+`}}}`), &s); err != nil {
					t.Fatal(err)
				}
				return map[string]any{"name": name, "served": true, "storage": storage, "schema": map[string]any{"openAPIV3Schema": s}}
			}
			spec["versions"] = []any{
				version("v1", true, `"a":{"type":"integer"},"e":{"type":"string","default":"e1"}`, ""),
				version("v2", false, `"a":{"type":"integer"},"c":{"type":"string","default":"dc"},"e":{"type":"string"}`,
					`,"x-kubernetes-validations":[{"rule":"!has(oldSelf.c) || self.c == oldSelf.c","message":"c is set once"}]`),
			}
			e.must(201, "POST", crdPath, crd)
			v2 := "/apis/example.com/v2/namespaces/default/gizmos"
			obj := func(name, meta, spec string) string {
				return `{"apiVersion":"example.com/v2","kind":"Gizmo","metadata":{"name":"` + name + `"` + meta + `},"spec":` + spec + `}`
			}
			const read = `{"a":1,"e":"e1"}` // stored in v1 without c, read through v2
			// Each answer is checked, not required: a failure shows the
			// others still.
			try := func(code int, method, path string, body any, hdr ...string) map[string]any {
				t.Helper()
				r := e.do(method, path, body, hdr...)
				if r.code != code {
					t.Errorf("%s %s: got %d, want %d: %s", method, path, r.code, code, r.body)
					return nil
				}
				return r.json(t)
			}
			check := func(what string, m map[string]any, want string) {
				t.Helper()
				if m == nil {
					return
				}
				b, _ := json.Marshal(m["spec"])
				if m["apiVersion"] != "example.com/v2" || string(b) != want {
					t.Errorf("%s: %v %s, want example.com/v2 %s", what, m["apiVersion"], b, want)
				}
			}
			check("create", try(201, "POST", v2, obj("g", "", `{"a":1}`)), read)
			check("get", try(200, "GET", v2+"/g", nil), read)
			check("list", e.must(200, "GET", v2, nil)["items"].([]any)[0].(map[string]any), read)
			// oldSelf has no c: setting it passes the rule.
			check("merge patch setting c", try(200, "PATCH", v2+"/g", `{"spec":{"c":"z"}}`, "Content-Type", "application/merge-patch+json"), read)
			cur := e.must(200, "GET", v2+"/g", nil)
			rv := path(cur, "metadata", "resourceVersion").(string)
			check("update setting c", try(200, "PUT", v2+"/g", obj("g", `,"resourceVersion":"`+rv+`"`, `{"a":1,"c":"y"}`)), read)
			d := try(201, "POST", v2+"?dryRun=All", obj("d", `,"resourceVersion":"7"`, `{"a":1,"c":"y"}`))
			check("dry-run create naming a resourceVersion", d, read)
			if got := path(d, "metadata", "resourceVersion"); d != nil && got != "7" {
				t.Errorf("dry-run create naming a resourceVersion: resourceVersion %v, want 7", got)
			}
			check("dry-run create", try(201, "POST", v2+"?dryRun=All", obj("d", "", `{"a":1,"c":"y"}`)), read)
		})
	}
}
