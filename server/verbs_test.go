package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const cmPath = "/api/v1/namespaces/default/configmaps"

func TestConfigMapVerbs(t *testing.T) {
	e := newEnv(t)
	created := e.must(201, "POST", cmPath, cm("a", map[string]string{"app": "x"}, map[string]string{"k": "v"}))
	rv := path(created, "metadata", "resourceVersion").(string)
	uid := path(created, "metadata", "uid").(string)
	if rv == "" || uid == "" || path(created, "metadata", "creationTimestamp") == nil || path(created, "metadata", "namespace") != "default" {
		t.Fatalf("server fields not set: %v", created)
	}
	e.expectStatus(409, "AlreadyExists", `configmaps "a" already exists`, "POST", cmPath, cm("a", nil, nil))

	got := e.must(200, "GET", cmPath+"/a", nil)
	if path(got, "metadata", "resourceVersion") != rv || path(got, "data", "k") != "v" {
		t.Fatalf("get: %v", got)
	}
	e.expectStatus(404, "NotFound", `configmaps "nope" not found`, "GET", cmPath+"/nope", nil)

	// Update: stale RV conflicts, current RV succeeds, no RV is unconditional for built-ins.
	upd := cm("a", nil, map[string]string{"k": "v2"})
	upd["metadata"].(map[string]any)["resourceVersion"] = rv
	u1 := e.must(200, "PUT", cmPath+"/a", upd)
	if path(u1, "metadata", "uid") != uid || path(u1, "metadata", "resourceVersion") == rv {
		t.Fatalf("update: %v", u1)
	}
	e.expectStatus(409, "Conflict", `Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again`, "PUT", cmPath+"/a", upd)
	e.must(200, "PUT", cmPath+"/a", cm("a", nil, map[string]string{"k": "v3"}))
	e.expectStatus(404, "NotFound", "", "PUT", cmPath+"/zz", cm("zz", nil, nil))
	e.expectStatus(400, "BadRequest", "the name of the object (b) does not match the name on the URL (a)", "PUT", cmPath+"/a", cm("b", nil, nil))

	// Patches.
	p := e.must(200, "PATCH", cmPath+"/a", `{"data":{"m":"1"}}`, "Content-Type", "application/merge-patch+json")
	if path(p, "data", "m") != "1" || path(p, "data", "k") != "v3" {
		t.Fatalf("merge patch: %v", p)
	}
	p = e.must(200, "PATCH", cmPath+"/a", `[{"op":"add","path":"/data/j","value":"2"}]`, "Content-Type", "application/json-patch+json")
	if path(p, "data", "j") != "2" {
		t.Fatalf("json patch: %v", p)
	}
	p = e.must(200, "PATCH", cmPath+"/a", `{"metadata":{"labels":{"s":"3"}}}`, "Content-Type", "application/strategic-merge-patch+json")
	if path(p, "metadata", "labels", "s") != "3" {
		t.Fatalf("strategic patch: %v", p)
	}
	e.expectStatus(409, "Conflict", "", "PATCH", cmPath+"/a", `{"metadata":{"resourceVersion":"1"}}`, "Content-Type", "application/merge-patch+json")
	e.expectStatus(422, "Invalid", "", "PATCH", cmPath+"/a", `[{"op":"test","path":"/data/j","value":"nope"}]`, "Content-Type", "application/json-patch+json")
	e.expectStatus(400, "BadRequest", "", "PATCH", cmPath+"/a", `{not json`, "Content-Type", "application/merge-patch+json")
	e.expectStatus(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
		"PATCH", cmPath+"/a", `a: b`, "Content-Type", "application/apply-patch+yaml")
	e.expectStatus(415, "UnsupportedMediaType", "", "PATCH", cmPath+"/a", `a: b`, "Content-Type", "application/yaml")
	e.expectStatus(404, "NotFound", "", "PATCH", cmPath+"/zz", `{}`, "Content-Type", "application/merge-patch+json")

	// Delete with preconditions.
	e.expectStatus(409, "Conflict", fmt.Sprintf(`Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (wrong) does not match the UID in record (%s). The object might have been deleted and then recreated`, uid),
		"DELETE", cmPath+"/a", map[string]any{"preconditions": map[string]any{"uid": "wrong"}})
	e.expectStatus(409, "Conflict", "", "DELETE", cmPath+"/a", map[string]any{"preconditions": map[string]any{"resourceVersion": "1"}})
	d := e.must(200, "DELETE", cmPath+"/a", map[string]any{"preconditions": map[string]any{"uid": uid}})
	if d["kind"] != "Status" || d["status"] != "Success" || path(d, "details", "name") != "a" || path(d, "details", "uid") != uid {
		t.Fatalf("delete: %v", d)
	}
	e.expectStatus(404, "NotFound", `configmaps "a" not found`, "DELETE", cmPath+"/a", nil)

	// generateName and deletecollection by label.
	for i := 0; i < 3; i++ {
		obj := cm("", map[string]string{"grp": fmt.Sprint(i % 2)}, nil)
		obj["metadata"].(map[string]any)["generateName"] = "gen-"
		g := e.must(201, "POST", cmPath, obj)
		if n := path(g, "metadata", "name").(string); len(n) != len("gen-")+5 {
			t.Fatalf("generated name %q", n)
		}
	}
	dc := e.must(200, "DELETE", cmPath+"?labelSelector=grp%3D0", nil)
	if dc["kind"] != "ConfigMapList" || len(dc["items"].([]any)) != 2 {
		t.Fatalf("deletecollection: %v", dc)
	}
	l := e.must(200, "GET", cmPath, nil)
	if items := l["items"].([]any); len(items) != 1 || path(items[0].(map[string]any), "metadata", "labels", "grp") != "1" {
		t.Fatalf("after deletecollection: %v", l)
	}
	// dryRun writes nothing.
	e.must(201, "POST", cmPath+"?dryRun=All", cm("dry", nil, nil))
	e.expectStatus(404, "NotFound", "", "GET", cmPath+"/dry", nil)
}

func TestStoredFormIsCanonical(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, `{"data":{"z":"1"},"metadata":{"name":"c","resourceVersion":"0"},"kind":"ConfigMap","apiVersion":"v1"}`)
	kv, err := e.store.Get(t.Context(), "/registry/configmaps/default/c")
	if err != nil {
		t.Fatal(err)
	}
	// kube's typed order: kind, apiVersion, ObjectMeta's fields in their
	// Go order, resourceVersion (spliced on read) after uid.
	want := regexp.MustCompile(`^\{"kind":"ConfigMap","apiVersion":"v1","metadata":\{"name":"c","namespace":"default","uid":"[^"]+","resourceVersion":"[0-9]+","creationTimestamp":"[^"]+","managedFields":\[.*\]\},"data":\{"z":"1"\}\}$`)
	if !want.Match(kv.Value) {
		t.Fatalf("stored value not canonical: %s", kv.Value)
	}
}

func TestHealthVersionAndMethods(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if r := e.do("GET", p, nil); r.code != 200 || string(r.body) != "ok" {
			t.Errorf("%s: %d %s", p, r.code, r.body)
		}
	}
	v := e.must(200, "GET", "/version", nil)
	if v["gitVersion"] != GitVersion || v["major"] != "1" {
		t.Fatalf("version: %v", v)
	}
	e.expectStatus(405, "MethodNotAllowed", "", "POST", cmPath+"/a", cm("a", nil, nil))
	e.expectStatus(404, "NotFound", "the server could not find the requested resource", "GET", "/api/v1/namespaces/default/widgets", nil)
	e.expectStatus(404, "NotFound", "the server could not find the requested resource", "GET", "/apis/apps/v1/things", nil)
	// Outside kube's built-in API, its plain 404 (an unknown group, any other path).
	e.expectNoRoute("GET", "/apis/nope.io/v1/things")
	e.expectNoRoute("GET", "/apis/nope.io")
	e.expectNoRoute("GET", "/nothing/here")
	if r := e.do("GET", "/openapi/v3", nil); r.code != http.StatusOK {
		t.Fatalf("openapi v3: %d", r.code)
	}
}

func TestStatusSubresource(t *testing.T) {
	e := newEnv(t)
	pods := "/api/v1/namespaces/default/pods"
	e.must(201, "POST", pods, map[string]any{"metadata": map[string]any{"name": "p"}, "spec": map[string]any{"nodeName": "n1",
		"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}})
	// A status write changes only status.
	p := e.must(200, "PATCH", pods+"/p/status", `{"status":{"phase":"Running"},"spec":{"nodeName":"other"}}`, "Content-Type", "application/merge-patch+json")
	if path(p, "status", "phase") != "Running" || path(p, "spec", "nodeName") != "n1" {
		t.Fatalf("status patch: %v", p)
	}
	// A main write leaves status alone.
	p = e.must(200, "PATCH", pods+"/p", `{"status":{"phase":"Failed"},"metadata":{"labels":{"a":"b"}}}`, "Content-Type", "application/merge-patch+json")
	if path(p, "status", "phase") != "Running" || path(p, "metadata", "labels", "a") != "b" {
		t.Fatalf("main patch: %v", p)
	}
	e.must(200, "GET", pods+"/p/status", nil)
	e.expectStatus(404, "NotFound", "", "GET", cmPath+"/x/status", nil)
	e.expectStatus(404, "NotFound", "", "GET", pods+"/p/log", nil)
	names := discoveryNames(t, e, "/api/v1")
	if !slices.Contains(names, "pods/status") || slices.Contains(names, "configmaps/status") {
		t.Fatalf("discovery: %v", names)
	}
}

// TestGetResourceVersion: a GET at resourceVersion N reads a state not
// older than N, as kube's, so one ahead of the store is kube's 504 (it
// used to answer the current object, or 404); an unparsable one is
// kube's 500, and the export parameter its 400.
func TestGetResourceVersion(t *testing.T) {
	e := newEnv(t)
	created := e.must(201, "POST", cmPath, cm("g", nil, nil))
	rv := path(created, "metadata", "resourceVersion").(string)
	for _, q := range []string{"", "?resourceVersion=0", "?resourceVersion=00", "?resourceVersion=" + rv, "?export=false"} {
		if got := path(e.must(200, "GET", cmPath+"/g"+q, nil), "metadata", "resourceVersion"); got != rv {
			t.Errorf("GET%s: resourceVersion %v, want %s", q, got, rv)
		}
	}
	n, _ := strconv.ParseInt(rv, 10, 64)
	future := strconv.FormatInt(n+1_000_000, 10)
	// (The current revision in the message may have moved on: other
	// writers.)
	for _, c := range []struct{ name, rv string }{{"g", future}, {"missing", future}, {"g", "18446744073709551615"}} {
		st := e.expectStatus(504, "Timeout", "", "GET", cmPath+"/"+c.name+"?resourceVersion="+c.rv, nil)
		if msg, _ := st["message"].(string); !strings.HasPrefix(msg, "Timeout: Too large resource version: "+c.rv+", current: ") {
			t.Errorf("GET %s at %s: message %q", c.name, c.rv, msg)
		}
		if d, _ := st["details"].(map[string]any); d == nil || d["retryAfterSeconds"] != float64(1) {
			t.Errorf("GET %s at %s: details %v", c.name, c.rv, st["details"])
		}
	}
	if m := e.must(500, "GET", cmPath+"/g?resourceVersion=abc", nil); m["message"] != `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax` || m["reason"] != nil {
		t.Errorf("unparsable resourceVersion: %v", m)
	}
	e.expectStatus(400, "BadRequest", "the export parameter, deprecated since v1.14, is no longer supported", "GET", cmPath+"/g?export=true", nil)
}

// TestListWatchResourceVersionAsKube: a watch at a resourceVersion
// kube's versioner does not parse is kube's 500 (its cacher's error is no
// API status), after the selectors' 400s, where a list of it is kube's
// 400; one past int64 (kube's versioner parses a uint64) is a revision no
// store reaches: a list's 504 "Too large resource version" naming it, a
// watch that waits for changes, or with initial events ends with that 504
// as its one event (kube-apiserver v1.37.2; e2e.TestKubeListWatchParamsSameAsOurs).
func TestListWatchResourceVersionAsKube(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("w", nil, nil))
	for _, rv := range []string{"abc", "-1", "1.5", "18446744073709551616"} {
		_, perr := strconv.ParseUint(rv, 10, 64)
		msg := fmt.Sprintf("resourceVersion: Invalid value: %q: %v", rv, perr)
		for _, p := range []string{cmPath + "?watch=1&", "/api/v1/watch/namespaces/default/configmaps?", "/api/v1/watch/namespaces/default/configmaps/w?",
			cmPath + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&", cmPath + "?watch=1&timeoutSeconds=-1&"} {
			if m := e.must(500, "GET", p+"resourceVersion="+rv, nil); m["message"] != msg || m["reason"] != nil || m["details"] != nil {
				t.Errorf("%s resourceVersion=%s: %v", p, rv, m)
			}
		}
		e.expectStatus(400, "BadRequest", "invalid resource version: "+msg, "GET", cmPath+"?resourceVersion="+rv, nil)
		// The selectors come first.
		e.expectStatus(400, "BadRequest", "", "GET", cmPath+"?watch=1&fieldSelector=nope%3Dx&resourceVersion="+rv, nil)
		e.expectStatus(400, "BadRequest", "fieldSelector metadata.name doesn't match requested name", "GET",
			"/api/v1/watch/namespaces/default/configmaps/w?fieldSelector=metadata.name%3Dv&resourceVersion="+rv, nil)
	}
	for _, rv := range []string{"9223372036854775808", "18446744073709551615"} {
		for _, q := range []string{"", "&limit=1", "&resourceVersionMatch=Exact"} {
			st := e.expectStatus(504, "Timeout", "", "GET", cmPath+"?resourceVersion="+rv+q, nil)
			if msg, _ := st["message"].(string); !strings.HasPrefix(msg, "Timeout: Too large resource version: "+rv+", current: ") {
				t.Errorf("list at %s%s: message %q", rv, q, msg)
			}
		}
		if r := e.do("GET", cmPath+"?watch=1&timeoutSeconds=1&resourceVersion="+rv, nil); r.code != 200 || len(r.body) != 0 {
			t.Errorf("watch at %s: %d %q", rv, r.code, r.body)
		}
		r := e.do("GET", cmPath+"?watch=1&timeoutSeconds=5&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion="+rv, nil)
		var ev struct {
			Type   string
			Object map[string]any
		}
		if err := json.Unmarshal(r.body, &ev); err != nil || r.code != 200 || ev.Type != "ERROR" || ev.Object["code"] != float64(504) ||
			!strings.HasPrefix(fmt.Sprint(ev.Object["message"]), "Timeout: Too large resource version: "+rv+", current: ") {
			t.Errorf("watch with initial events at %s: %d %q", rv, r.code, r.body)
		}
	}
}

// TestListWatchZeroResourceVersionAsKube: "0" with leading zeros ("00")
// is 0 to kube's versioner but not "0" to its handler and cacher: a list
// answers every object (a limit honoured, Exact allowed), a watch sends
// the objects as ADDED events without kube's watch-list default (no
// bookmark ending them), and a continued list refuses it as any
// resourceVersion but "0". serve answered each a 400.
func TestListWatchZeroResourceVersionAsKube(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "b", "c"} {
		e.must(201, "POST", cmPath, cm(n, nil, nil))
	}
	names := func(l map[string]any) []string {
		var out []string
		for _, it := range l["items"].([]any) {
			out = append(out, path(it.(map[string]any), "metadata", "name").(string))
		}
		return out
	}
	for _, q := range []string{"resourceVersion=00", "resourceVersion=000&resourceVersionMatch=NotOlderThan", "resourceVersion=00&resourceVersionMatch=Exact"} {
		if got := names(e.must(200, "GET", cmPath+"?"+q, nil)); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("%s: %v", q, got)
		}
	}
	for _, q := range []string{"resourceVersion=00&limit=2", "resourceVersion=00&resourceVersionMatch=NotOlderThan&limit=2", "resourceVersion=00&resourceVersionMatch=Exact&limit=2"} {
		l := e.must(200, "GET", cmPath+"?"+q, nil)
		if got := names(l); !slices.Equal(got, []string{"a", "b"}) || path(l, "metadata", "continue") == nil || path(l, "metadata", "remainingItemCount") != float64(1) {
			t.Errorf("%s: %v", q, l)
		}
		tok := path(l, "metadata", "continue").(string)
		e.expectStatus(400, "BadRequest", "specifying resource version is not allowed when using continue", "GET", cmPath+"?limit=2&resourceVersion=00&continue="+url.QueryEscape(tok), nil)
	}
	r := e.do("GET", cmPath+"?watch=1&timeoutSeconds=1&allowWatchBookmarks=true&resourceVersion=00", nil)
	dec := json.NewDecoder(bytes.NewReader(r.body))
	var events []string
	for {
		var ev struct {
			Type   string
			Object map[string]any
		}
		if err := dec.Decode(&ev); err != nil {
			break
		}
		if ev.Type == "BOOKMARK" && path(ev.Object, "metadata", "annotations") == nil {
			continue // a periodic bookmark, not the end of initial events
		}
		events = append(events, ev.Type+" "+fmt.Sprint(path(ev.Object, "metadata", "name")))
	}
	if r.code != 200 || !slices.Equal(events, []string{"ADDED a", "ADDED b", "ADDED c"}) {
		t.Errorf("watch at 00: %d %v %q", r.code, events, r.body)
	}
}
