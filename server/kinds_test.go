package server

import (
	"slices"
	"strings"
	"testing"
)

// Built-in kinds go through kube's strategies: these tests pin what that
// changes on the wire, each against kube-apiserver v1.37's behaviour.

const (
	podPath   = "/api/v1/namespaces/default/pods"
	svcPath   = "/api/v1/namespaces/default/services"
	secPath   = "/api/v1/namespaces/default/secrets"
	nsPath    = "/api/v1/namespaces"
	jsonMerge = "application/merge-patch+json"
)

func testPod(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}
}

func testService(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"ports": []any{map[string]any{"port": 80}}}}
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// causeFields lists the field of each cause of a 422.
func causeFields(st map[string]any) []string {
	var out []string
	causes, _ := path(st, "details", "causes").([]any)
	for _, c := range causes {
		f, _ := c.(map[string]any)["field"].(string)
		out = append(out, f)
	}
	return out
}

func TestTypedGeneration(t *testing.T) {
	e := newEnv(t)
	p := e.must(201, "POST", podPath, testPod("p"))
	if num(path(p, "metadata", "generation")) != 1 {
		t.Fatalf("pod generation on create: %v", path(p, "metadata", "generation"))
	}
	// A spec change bumps a pod's generation; a label change does not.
	p = e.must(200, "PATCH", podPath+"/p", `{"spec":{"activeDeadlineSeconds":30}}`, "Content-Type", jsonMerge)
	if num(path(p, "metadata", "generation")) != 2 {
		t.Fatalf("pod generation after spec change: %v", path(p, "metadata", "generation"))
	}
	p = e.must(200, "PATCH", podPath+"/p", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", jsonMerge)
	if num(path(p, "metadata", "generation")) != 2 {
		t.Fatalf("pod generation after label change: %v", path(p, "metadata", "generation"))
	}
	// ConfigMaps have none.
	c := e.must(201, "POST", cmPath, cm("c", nil, map[string]string{"a": "1"}))
	c = e.must(200, "PATCH", cmPath+"/c", `{"data":{"a":"2"}}`, "Content-Type", jsonMerge)
	if g := path(c, "metadata", "generation"); g != nil {
		t.Fatalf("configmap generation: %v", g)
	}
	// A CRD's generation counts spec changes only.
	crd := widgetCRD("Namespaced", "v1")
	got := e.must(201, "POST", crdPath, crd)
	if num(path(got, "metadata", "generation")) != 1 {
		t.Fatalf("crd generation on create: %v", path(got, "metadata", "generation"))
	}
	got = e.must(200, "PATCH", crdPath+"/widgets.example.com", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", jsonMerge)
	if num(path(got, "metadata", "generation")) != 1 {
		t.Fatalf("crd generation after label change: %v", path(got, "metadata", "generation"))
	}
	got = e.must(200, "PATCH", crdPath+"/widgets.example.com", `{"spec":{"names":{"shortNames":["wd","wds"]}}}`, "Content-Type", jsonMerge)
	if num(path(got, "metadata", "generation")) != 2 {
		t.Fatalf("crd generation after spec change: %v", path(got, "metadata", "generation"))
	}
}

func TestTypedStatusReset(t *testing.T) {
	e := newEnv(t)
	// Status sent on create is the server's to decide: a pod starts
	// Pending, a service with an empty status.
	pod := testPod("p")
	pod["status"] = map[string]any{"phase": "Running", "podIP": "10.0.0.1"}
	p := e.must(201, "POST", podPath, pod)
	if path(p, "status", "phase") != "Pending" || path(p, "status", "podIP") != nil {
		t.Fatalf("pod status on create: %v", p["status"])
	}
	svc := testService("s")
	svc["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.2.3.4"}}}}
	s := e.must(201, "POST", svcPath, svc)
	if path(s, "status", "loadBalancer", "ingress") != nil {
		t.Fatalf("service status on create: %v", s["status"])
	}
	// Writes to the main resource keep the stored status.
	e.must(200, "PATCH", podPath+"/p/status", `{"status":{"phase":"Running"}}`, "Content-Type", jsonMerge)
	p = e.must(200, "PATCH", podPath+"/p", `{"status":{"phase":"Failed"},"metadata":{"labels":{"x":"y"}}}`, "Content-Type", jsonMerge)
	if path(p, "status", "phase") != "Running" {
		t.Fatalf("pod status after main write: %v", p["status"])
	}
	ns := e.must(201, "POST", nsPath, map[string]any{"metadata": map[string]any{"name": "n1"}, "status": map[string]any{"phase": "Terminating"}})
	if path(ns, "status", "phase") != "Active" {
		t.Fatalf("namespace status on create: %v", ns["status"])
	}
	ns = e.must(200, "PATCH", nsPath+"/n1", `{"status":{"phase":"Terminating"}}`, "Content-Type", jsonMerge)
	if path(ns, "status", "phase") != "Active" {
		t.Fatalf("namespace status after main write: %v", ns["status"])
	}
}

func TestTypedNamespaceLabel(t *testing.T) {
	e := newEnv(t)
	ns := e.must(201, "POST", nsPath, map[string]any{"metadata": map[string]any{"name": "n2"}})
	if path(ns, "metadata", "labels", "kubernetes.io/metadata.name") != "n2" {
		t.Fatalf("namespace labels: %v", path(ns, "metadata", "labels"))
	}
	// Clients cannot remove it.
	ns = e.must(200, "PUT", nsPath+"/n2", map[string]any{"metadata": map[string]any{"name": "n2", "labels": map[string]any{}}})
	if path(ns, "metadata", "labels", "kubernetes.io/metadata.name") != "n2" {
		t.Fatalf("namespace labels after update: %v", path(ns, "metadata", "labels"))
	}
}

func TestTypedImmutable(t *testing.T) {
	e := newEnv(t)
	c := cm("frozen", nil, map[string]string{"a": "1"})
	c["immutable"] = true
	e.must(201, "POST", cmPath, c)
	st := e.expectStatus(422, "Invalid", "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set",
		"PATCH", cmPath+"/frozen", `{"data":{"a":"2"}}`, "Content-Type", jsonMerge)
	if f := causeFields(st); !slices.Equal(f, []string{"data"}) {
		t.Fatalf("causes: %v", st)
	}
	sec := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "type": "example.com/a"}
	e.must(201, "POST", secPath, sec)
	st = e.expectStatus(422, "Invalid", "", "PATCH", secPath+"/s", `{"type":"example.com/b"}`, "Content-Type", jsonMerge)
	if f := causeFields(st); !slices.Equal(f, []string{"type"}) || !strings.Contains(st["message"].(string), "field is immutable") {
		t.Fatalf("secret type change: %v", st)
	}
}

func TestTypedValidation(t *testing.T) {
	e := newEnv(t)
	st := e.expectStatus(422, "Invalid", "", "POST", podPath,
		map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "empty"}, "spec": map[string]any{}})
	if f := causeFields(st); !slices.Contains(f, "spec.containers") || path(st, "details", "kind") != "Pod" {
		t.Fatalf("pod without containers: %v", st)
	}
	// A boolean where kube's type has a string is the decoder's 400.
	e.expectStatus(400, "BadRequest",
		`ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct field ConfigMap.data of type string`,
		"POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"enabled":true}}`)
	e.must(404, "GET", cmPath+"/b", nil)
	// Through a patch it is kube's 422 on the patch.
	e.must(201, "POST", cmPath, cm("b", nil, map[string]string{"enabled": "true"}))
	st = e.expectStatus(422, "Invalid", "", "PATCH", cmPath+"/b", `{"data":{"enabled":true}}`, "Content-Type", jsonMerge)
	if f := causeFields(st); !slices.Equal(f, []string{"patch"}) ||
		!strings.Contains(st["message"].(string), "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string") {
		t.Fatalf("patch with a boolean: %v", st)
	}
	// Secret stringData is merged into data and type defaulted, by kube's conversion and defaults.
	sec := e.must(201, "POST", "/api/v1/namespaces/default/secrets", map[string]any{"metadata": map[string]any{"name": "sd"},
		"stringData": map[string]any{"user": "admin"}})
	if path(sec, "data", "user") != "YWRtaW4=" || sec["stringData"] != nil || sec["type"] != "Opaque" {
		t.Fatalf("secret: %v", sec)
	}
}

func TestTypedUnknownFields(t *testing.T) {
	e := newEnv(t)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"},"data":{"a":"1"},"spce":{"x":1}}`
	r := e.do("POST", cmPath, body)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if w := r.hdr.Values("Warning"); !slices.Contains(w, `299 - "unknown field \"spce\""`) {
		t.Fatalf("warnings: %q", w)
	}
	if got := e.must(200, "GET", cmPath+"/u", nil); got["spce"] != nil || path(got, "data", "a") != "1" {
		t.Fatalf("stored: %v", got)
	}
	e.expectStatus(400, "BadRequest", `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spce"`,
		"POST", cmPath+"?fieldValidation=Strict", strings.Replace(body, `"u"`, `"v"`, 1))
	// Nested unknown fields, by their path, and through a patch.
	r = e.do("PATCH", podPath+"/nope", `{}`, "Content-Type", jsonMerge)
	if r.code != 404 {
		t.Fatalf("patch of missing pod: %d", r.code)
	}
	e.must(201, "POST", podPath, testPod("q"))
	r = e.do("PATCH", podPath+"/q", `{"spec":{"containers":[{"name":"c","image":"busybox","colour":"red"}]}}`, "Content-Type", jsonMerge)
	if r.code != 200 || !slices.Contains(r.hdr.Values("Warning"), `299 - "unknown field \"spec.containers[0].colour\""`) {
		t.Fatalf("patch: %d %q %s", r.code, r.hdr.Values("Warning"), r.body)
	}
	if strings.Contains(string(e.do("GET", podPath+"/q", nil).body), "colour") {
		t.Fatal("unknown field stored")
	}
}

// TestCustomResourceGenerationAndStatus: kube's custom-resource strategy
// decides generation and status: without the status subresource any
// change outside metadata (status included) bumps generation; with it,
// status sent on create is dropped and main writes keep the stored one.
func TestCustomResourceGenerationAndStatus(t *testing.T) {
	e := newEnv(t)
	plain := widgetCRD("Namespaced", "v1")
	e.must(201, "POST", crdPath, plain)
	withStatus := widgetCRD("Namespaced", "v1")
	spec := withStatus["spec"].(map[string]any)
	spec["names"] = map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
	spec["versions"].([]any)[0].(map[string]any)["subresources"] = map[string]any{"status": map[string]any{}}
	withStatus["metadata"] = map[string]any{"name": "gadgets.example.com"}
	e.must(201, "POST", crdPath, withStatus)

	widgets := "/apis/example.com/v1/namespaces/default/widgets"
	w := widget("w", "v1")
	w["status"] = map[string]any{"ready": false}
	got := e.must(201, "POST", widgets, w)
	if num(path(got, "metadata", "generation")) != 1 || path(got, "status", "ready") != false {
		t.Fatalf("widget on create: %v", got)
	}
	got = e.must(200, "PATCH", widgets+"/w", `{"status":{"ready":true}}`, "Content-Type", jsonMerge)
	if num(path(got, "metadata", "generation")) != 2 {
		t.Fatalf("widget generation after a status change without the subresource: %v", got)
	}
	got = e.must(200, "PATCH", widgets+"/w", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", jsonMerge)
	if num(path(got, "metadata", "generation")) != 2 {
		t.Fatalf("widget generation after a label change: %v", got)
	}

	gadgets := "/apis/example.com/v1/namespaces/default/gadgets"
	g := map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"},
		"spec": map[string]any{"color": "red"}, "status": map[string]any{"ready": true}}
	got = e.must(201, "POST", gadgets, g)
	if num(path(got, "metadata", "generation")) != 1 || got["status"] != nil {
		t.Fatalf("gadget on create: %v", got)
	}
	e.must(200, "PATCH", gadgets+"/g/status", `{"status":{"ready":true}}`, "Content-Type", jsonMerge)
	got = e.must(200, "PATCH", gadgets+"/g", `{"status":{"ready":false},"spec":{"color":"blue"}}`, "Content-Type", jsonMerge)
	if num(path(got, "metadata", "generation")) != 2 || path(got, "status", "ready") != true {
		t.Fatalf("gadget after a main write: %v", got)
	}
	got = e.must(200, "PATCH", gadgets+"/g/status", `{"status":{"ready":false}}`, "Content-Type", jsonMerge)
	if num(path(got, "metadata", "generation")) != 2 || path(got, "status", "ready") != false {
		t.Fatalf("gadget after a status write: %v", got)
	}
}
