package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

// TestKubeCRConversionWebhook: a CRD with two versions and a conversion
// webhook (strategy Webhook): writes and reads at either version, lists,
// a watch at the version not stored, and what fails while the webhook
// refuses every conversion. Compared with a real kube-apiserver, or
// without the binary with the answers kube-apiserver v1.37.2 gave.
func TestKubeCRConversionWebhook(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	got := crConversionScript(t, newRawClient(t, restConfig(t, s)), "serve")
	if _, err := kubeapiserver.Binary(); err != nil {
		t.Logf("no kube-apiserver (%v): comparing with its answers on record", err)
		compareLogs(t, got, kubeCRConversionLog)
		return
	}
	compareLogs(t, got, crConversionScript(t, newRawClient(t, kubeRESTConfig(t)), "kube"))
}

// convHook is a real HTTPS conversion webhook with its own CA, converting
// Conv objects between v1 (spec.host, spec.port) and v2 (spec.address,
// "host:port"). It counts calls and objects by desired version.
type convHook struct {
	srv     *httptest.Server
	ca      []byte      // PEM, for caBundle
	fail    atomic.Bool // answer every review with a Failure
	mu      sync.Mutex
	calls   map[string]int // by desired version, since the last take
	objects map[string]int
}

func newConvHook(t *testing.T) *convHook {
	h := &convHook{calls: map[string]int{}, objects: map[string]int{}}
	h.srv, h.ca = startTLSHook(t, http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *convHook) serve(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	desired := req.DesiredAPIVersion
	h.mu.Lock()
	h.calls[desired]++
	h.objects[desired] += len(req.Objects)
	h.mu.Unlock()
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	if h.fail.Load() {
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "conversion refused"}
	} else {
		for _, raw := range req.Objects {
			out, err := convertConv(raw.Raw, desired)
			if err != nil {
				resp.ConvertedObjects = nil
				resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
				break
			}
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
		}
	}
	review.Request, review.Response = nil, resp
	review.APIVersion, review.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// convertConv converts one Conv to the version desired, keeping its
// metadata and any other field.
func convertConv(raw []byte, desired string) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	switch {
	case spec == nil:
	case strings.HasSuffix(desired, "/v2"):
		if host, ok := spec["host"]; ok {
			spec["address"] = fmt.Sprintf("%v:%v", host, spec["port"])
			delete(spec, "host")
			delete(spec, "port")
		}
	case strings.HasSuffix(desired, "/v1"):
		if addr, ok := spec["address"].(string); ok {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			p, err := strconv.Atoi(port)
			if err != nil {
				return nil, err
			}
			spec["host"], spec["port"] = host, p
			delete(spec, "address")
		}
	}
	obj["apiVersion"] = desired
	return json.Marshal(obj)
}

// convCRD is a CRD of crGroup serving v1 and v2 (stored), converted by
// h.
func convCRD(h *convHook, plural, kind string) string {
	version := func(v string, storage bool) string {
		return `{"name":"` + v + `","served":true,"storage":` + strconv.FormatBool(storage) +
			`,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`
	}
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + `.` + crGroup + `"},
		"spec":{"group":"` + crGroup + `","scope":"Namespaced","names":{"plural":"` + plural + `","singular":"` + strings.ToLower(kind) + `","kind":"` + kind + `"},
		"versions":[` + version("v1", false) + `,` + version("v2", true) + `],
		"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],
		"clientConfig":{"url":"` + h.srv.URL + `/convert","caBundle":"` + base64.StdEncoding.EncodeToString(h.ca) + `"}}}}}`
}

// counts is the calls and objects sent to desired so far (since the last
// take).
func (h *convHook) counts(desired string) (calls, objects int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[desired], h.objects[desired]
}

// TestCRConversionWatchListBatches: a watch-list (client-go's informers
// start with one) in a version not stored sends its initial events'
// objects to the conversion webhook in a few reviews, not one each. kube
// converts them as its per-version watch cache receives them, so serve
// only; the answers are compared with kube in TestKubeCRConversionWebhook.
func TestCRConversionWatchListBatches(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := newRawClient(t, restConfig(t, s))
	h := newConvHook(t)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	t.Cleanup(func() { c.do("DELETE", crds+"/bconvs."+crGroup, "", "") })
	if code, m := c.do("POST", crds, jsonCT, convCRD(h, "bconvs", "Bconv")); code != http.StatusCreated {
		t.Fatalf("crd: %d %v", code, m)
	}
	v1 := "/apis/" + crGroup + "/v1/namespaces/default/bconvs"
	v2 := "/apis/" + crGroup + "/v2/namespaces/default/bconvs"
	c.waitOK(v1)
	c.waitOK(v2)
	const n = 40
	for i := range n {
		body := fmt.Sprintf(`{"apiVersion":"%s/v2","kind":"Bconv","metadata":{"name":"b%d"},"spec":{"address":"h%d:%d"}}`, crGroup, i, i, i)
		if code, m := c.do("POST", v2, jsonCT, body); code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, m)
		}
	}
	calls0, objects0 := h.counts(crGroup + "/v1")
	events, members := watchListEvents(t, c, v1)
	for _, ev := range events {
		if ev["apiVersion"] != crGroup+"/v1" || jsonAt(ev, "spec.host") == "-" {
			t.Fatalf("initial event: %v", ev)
		}
	}
	calls, objects := h.counts(crGroup + "/v1")
	calls, objects = calls-calls0, objects-objects0
	t.Logf("%d initial events: %d reviews of %d objects, %d gzip members", len(events), calls, objects, members)
	if len(events) != n || objects != n || calls > 3 {
		t.Fatalf("%d initial events: %d reviews of %d objects, want %d events in at most 3 reviews", len(events), calls, objects, n)
	}
	// Written as one burst, not flushed (a gzip member ended) per event.
	if members > 4 {
		t.Fatalf("%d initial events in %d gzip members", n, members)
	}
}

// watchListEvents opens a watch-list of path, gzipped, and reads its
// initial events up to the bookmark that ends them: their objects, and
// how many gzip members (one per flush) carried them.
func watchListEvents(t *testing.T, c *rawClient, path string) (objects []map[string]any, members int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.host+path+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip") // set here: the transport leaves the body compressed
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("watch-list: %d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	br := bufio.NewReader(resp.Body)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	for {
		members++
		zr.Multistream(false)
		dec := json.NewDecoder(zr)
		for {
			var ev struct {
				Type   string         `json:"type"`
				Object map[string]any `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				break // the member's end
			}
			switch {
			case ev.Type == "ADDED":
				objects = append(objects, ev.Object)
			case ev.Type == "BOOKMARK" && isInitialEventsEnd(ev.Object):
				return objects, members
			case ev.Type == "BOOKMARK":
			default:
				t.Fatalf("watch-list event %s: %v", ev.Type, ev.Object)
			}
		}
		if err := zr.Reset(br); err != nil {
			t.Fatalf("after %d gzip members and %d events: %v", members, len(objects), err)
		}
	}
}

// isInitialEventsEnd: a bookmark's object is the one that ends a
// watch-list's initial events.
func isInitialEventsEnd(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann["k8s.io/initial-events-end"] == "true"
}

// take is the calls and objects by desired version since the last take.
func (h *convHook) take() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for v, n := range h.calls {
		out = append(out, fmt.Sprintf("to %s: %d calls, %d objects", v[strings.LastIndex(v, "/")+1:], n, h.objects[v]))
	}
	slices.Sort(out)
	clear(h.calls)
	clear(h.objects)
	if out == nil {
		return "no calls"
	}
	return strings.Join(out, "; ")
}

// convItems records a list's code and, for each item, its name,
// apiVersion and spec (or a Status's reason and message).
func convItems(c *rawClient, name, path string) {
	c.t.Helper()
	code, m := c.do("GET", path, "", "")
	line := fmt.Sprintf("%s: %d", name, code)
	if m["kind"] == "Status" {
		line += fmt.Sprintf(" %v %q", m["reason"], m["message"])
	} else {
		items, _ := m["items"].([]any)
		for _, it := range items {
			it, _ := it.(map[string]any)
			line += fmt.Sprintf(" %s:%s:%s", jsonAt(it, "metadata.name"), jsonAt(it, "apiVersion"), jsonAt(it, "spec"))
		}
	}
	c.log = append(c.log, line)
}

// convWatch records a watch's code and, for each event, its type and the
// object's name, apiVersion and spec. The version's watch cache, which
// converts each event through the webhook, has caught up first.
func convWatch(c *rawClient, name, path string) {
	c.t.Helper()
	c.caughtUp(path)
	code, _, b := c.send("GET", path, "", "application/json", "")
	line := fmt.Sprintf("%s: %d", name, code)
	d := json.NewDecoder(bytes.NewReader(b))
	for {
		var ev map[string]any
		if err := d.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			line += " undecodable: " + err.Error()
			break
		}
		if ev["kind"] == "Status" {
			line += fmt.Sprintf(" %v %q", ev["reason"], ev["message"])
			continue
		}
		obj, _ := ev["object"].(map[string]any)
		line += fmt.Sprintf(" %v %s:%s:%s", ev["type"], jsonAt(obj, "metadata.name"), jsonAt(obj, "apiVersion"), jsonAt(obj, "spec"))
	}
	c.log = append(c.log, line)
}

var revisionRE = regexp.MustCompile(`revision=[0-9]+`)

// crConversionScript is the script both servers run; who names the
// server in the webhook's call counts, which are logged, not compared.
func crConversionScript(t *testing.T, c *rawClient, who string) []string {
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	h := newConvHook(t)
	name := "convs." + crGroup
	// Registered after the hook's, so run before it: the CRD goes (its
	// objects deleted by kube's finalizer) while the hook still answers.
	t.Cleanup(func() {
		c.do("DELETE", crds+"/"+name, "", "")
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if code, _ := c.do("GET", crds+"/"+name, "", ""); code == http.StatusNotFound {
				return
			}
			time.Sleep(100 * time.Millisecond) // polling for an asynchronous deletion
		}
		t.Logf("%s: CRD %s not gone", who, name)
	})
	crd := convCRD(h, "convs", "Conv")
	v1 := "/apis/" + crGroup + "/v1/namespaces/default/convs"
	v2 := "/apis/" + crGroup + "/v2/namespaces/default/convs"
	obj1 := func(n, host string, port int) string {
		return fmt.Sprintf(`{"apiVersion":"%s/v1","kind":"Conv","metadata":{"name":"%s"},"spec":{"host":"%s","port":%d}}`, crGroup, n, host, port)
	}
	obj2 := func(n, addr, rv string) string {
		meta := `"name":"` + n + `"`
		if rv != "" {
			meta += `,"resourceVersion":` + rv
		}
		return fmt.Sprintf(`{"apiVersion":"%s/v2","kind":"Conv","metadata":{%s},"spec":{"address":"%s"}}`, crGroup, meta, addr)
	}
	fields := []string{"apiVersion", "spec"}
	// Each step's webhook calls, logged: kube converts for its watch
	// caches too, asynchronously, so the counts are not compared.
	note := func(step string) { t.Logf("%s %s: webhook %s", who, step, h.take()) }

	c.step("create crd", "POST", crds, jsonCT, crd, "spec.conversion.strategy")
	c.waitOK(v1)
	c.waitOK(v2)
	note("crd served")

	c.step("create a at v1", "POST", v1, jsonCT, obj1("a", "a.example", 80), fields...)
	note("create a at v1")
	c.step("get a at v2", "GET", v2+"/a", "", "", fields...)
	note("get a at v2")
	c.step("get a at v1", "GET", v1+"/a", "", "", fields...)
	note("get a at v1")
	c.step("create b at v2", "POST", v2, jsonCT, obj2("b", "b.example:8080", ""), fields...)
	note("create b at v2")
	convItems(c, "list at v1", v1)
	note("list at v1")
	convItems(c, "list at v2", v2)
	note("list at v2")

	_, cur := c.do("GET", v2+"/a", "", "")
	c.step("update a at v2", "PUT", v2+"/a", jsonCT, obj2("a", "a.example:81", jsonAt(cur, "metadata.resourceVersion")), fields...)
	note("update a at v2")
	c.step("get a at v1 after update", "GET", v1+"/a", "", "", fields...)
	note("get a at v1 after update")

	c.step("merge patch b at v1", "PATCH", v1+"/b", mergePatch, `{"spec":{"port":9090}}`, fields...)
	note("merge patch b at v1")
	c.step("get b at v2", "GET", v2+"/b", "", "", fields...)
	note("get b at v2")

	// A watch at v1 from a list's resourceVersion sees the one write made
	// at v2 after it, converted.
	_, list := c.do("GET", v1, "", "")
	rv := strings.Trim(jsonAt(list, "metadata.resourceVersion"), `"`)
	c.step("patch a at v2", "PATCH", v2+"/a", mergePatch, `{"spec":{"address":"a.example:82"}}`, fields...)
	note("patch a at v2")
	convWatch(c, "watch at v1", v1+"?watch=1&timeoutSeconds=2&resourceVersion="+rv)
	note("watch at v1")

	// The webhook refuses every conversion. A write needing one fails
	// (kube: 500, a Status without a reason). A GET reads storage (kube:
	// etcd) and fails at v1. Kube's LIST at v1 is served by its v1 watch
	// cache, which converted the objects when their events came, so it
	// still answers 200 until a write the cache cannot convert (d); from
	// then on that cache cannot catch up with etcd's newest revision, so
	// the LIST reads etcd and fails. Both answers were the same in every
	// run against kube.
	h.fail.Store(true)
	c.step("refused: create c at v1", "POST", v1, jsonCT, obj1("c", "c.example", 1), fields...)
	note("refused: create c at v1")
	convItems(c, "refused: list at v1 before a write", v1)
	note("refused: list at v1 before a write")
	c.step("refused: create d at v2", "POST", v2, jsonCT, obj2("d", "d.example:2", ""), fields...)
	note("refused: create d at v2")
	c.step("refused: get a at v1", "GET", v1+"/a", "", "", fields...)
	note("refused: get a at v1")
	c.step("refused: get a at v2", "GET", v2+"/a", "", "", fields...)
	note("refused: get a at v2")
	convItems(c, "refused: list at v1", v1)
	note("refused: list at v1")
	c.step("refused: merge patch b at v1", "PATCH", v1+"/b", mergePatch, `{"spec":{"port":9191}}`, fields...)
	note("refused: merge patch b at v1")
	c.step("refused: delete b at v1", "DELETE", v1+"/b", "", "", fields...)
	note("refused: delete b at v1")
	// An unsafe delete (ignoreStoreReadErrorWithClusterBreakingPotential)
	// deletes only what storage cannot read: a at v2, where it reads, is
	// refused; b at v1 is deleted (not by a dry run), the answer a Status
	// naming it and its kind.
	unsafe := func(name, path, opts string) {
		code, m := c.do("DELETE", path, jsonCT, `{"ignoreStoreReadErrorWithClusterBreakingPotential":true`+opts+`}`)
		c.log = append(c.log, fmt.Sprintf("%s: %d %s", name, code, strings.Join([]string{
			jsonAt(m, "status"), jsonAt(m, "code"), jsonAt(m, "reason"), jsonAt(m, "message"), jsonAt(m, "details")}, " ")))
		note(name)
	}
	unsafe("refused: unsafe delete a at v2", v2+"/a", "")
	unsafe("refused: unsafe delete b at v1, dry run", v1+"/b", `,"dryRun":["All"]`)
	c.step("refused: get b at v2 after a dry run", "GET", v2+"/b", "", "", fields...)
	unsafe("refused: unsafe delete b at v1", v1+"/b", "")
	c.step("refused: get b at v2 after the delete", "GET", v2+"/b", "", "", fields...)
	h.fail.Store(false)
	convItems(c, "list at v1 again", v1)
	note("list at v1 again")

	// The hook's address, uids and etcd revisions differ per run.
	hook := strings.TrimPrefix(h.srv.URL, "https://")
	for i, l := range c.log {
		l = uidRE.ReplaceAllString(strings.ReplaceAll(l, hook, "HOOK"), "<uid>")
		c.log[i] = revisionRE.ReplaceAllString(l, "revision=<rev>")
	}
	t.Logf("%s log:\n%s", who, strings.Join(c.log, "\n"))
	return c.log
}

// kubeCRConversionLog is crConversionScript's log against kube-apiserver
// v1.37.2.
var kubeCRConversionLog = []string{
	`create crd: 201 spec.conversion.strategy="Webhook"`,
	`create a at v1: 201 apiVersion="scaletest.example.com/v1" spec={"host":"a.example","port":80}`,
	`get a at v2: 200 apiVersion="scaletest.example.com/v2" spec={"address":"a.example:80"}`,
	`get a at v1: 200 apiVersion="scaletest.example.com/v1" spec={"host":"a.example","port":80}`,
	`create b at v2: 201 apiVersion="scaletest.example.com/v2" spec={"address":"b.example:8080"}`,
	`list at v1: 200 "a":"scaletest.example.com/v1":{"host":"a.example","port":80} "b":"scaletest.example.com/v1":{"host":"b.example","port":8080}`,
	`list at v2: 200 "a":"scaletest.example.com/v2":{"address":"a.example:80"} "b":"scaletest.example.com/v2":{"address":"b.example:8080"}`,
	`update a at v2: 200 apiVersion="scaletest.example.com/v2" spec={"address":"a.example:81"}`,
	`get a at v1 after update: 200 apiVersion="scaletest.example.com/v1" spec={"host":"a.example","port":81}`,
	`merge patch b at v1: 200 apiVersion="scaletest.example.com/v1" spec={"host":"b.example","port":9090}`,
	`get b at v2: 200 apiVersion="scaletest.example.com/v2" spec={"address":"b.example:9090"}`,
	`patch a at v2: 200 apiVersion="scaletest.example.com/v2" spec={"address":"a.example:82"}`,
	`watch at v1: 200 MODIFIED "a":"scaletest.example.com/v1":{"host":"a.example","port":82}`,
	`refused: create c at v1: 500 <nil> "conversion webhook for scaletest.example.com/v1, Kind=Conv failed: conversion refused"`,
	`refused: list at v1 before a write: 200 "a":"scaletest.example.com/v1":{"host":"a.example","port":82} "b":"scaletest.example.com/v1":{"host":"b.example","port":9090}`,
	`refused: create d at v2: 201 apiVersion="scaletest.example.com/v2" spec={"address":"d.example:2"}`,
	`refused: get a at v1: 500 InternalError "Internal error occurred: StorageError: corrupt object, Code: 7, Key: /scaletest.example.com/convs/default/a, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=<rev>: conversion webhook for scaletest.example.com/v2, Kind=Conv failed: conversion refused"`,
	`refused: get a at v2: 200 apiVersion="scaletest.example.com/v2" spec={"address":"a.example:82"}`,
	`refused: list at v1: 500 StorageReadError "failed to read one or more convs.scaletest.example.com from the storage: StorageError: corrupt object, Code: 7, Key: /registry/scaletest.example.com/convs/default/a, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=<rev>: conversion webhook for scaletest.example.com/v2, Kind=Conv failed: conversion refused (and 2 more)"`,
	`refused: merge patch b at v1: 500 <nil> "conversion webhook for scaletest.example.com/v1, Kind=Conv failed: conversion refused"`,
	`refused: delete b at v1: 500 InternalError "Internal error occurred: StorageError: corrupt object, Code: 7, Key: /scaletest.example.com/convs/default/b, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=<rev>: conversion webhook for scaletest.example.com/v2, Kind=Conv failed: conversion refused"`,
	`refused: unsafe delete a at v2: 409 "Failure" 409 "Conflict" "Operation cannot be fulfilled on convs.scaletest.example.com \"a\": StorageError: invalid object, Code: 4, Key: /registry/scaletest.example.com/convs/default/a, ResourceVersion: 0, AdditionalErrorMsg: unsafe deletion is not allowed because the object is decodable from storage" {"group":"scaletest.example.com","kind":"convs","name":"a"}`,
	`refused: unsafe delete b at v1, dry run: 200 "Success" 200 - - {"kind":"Conv","name":"b"}`,
	`refused: get b at v2 after a dry run: 200 apiVersion="scaletest.example.com/v2" spec={"address":"b.example:9090"}`,
	`refused: unsafe delete b at v1: 200 "Success" 200 - - {"kind":"Conv","name":"b"}`,
	`refused: get b at v2 after the delete: 404 NotFound "convs.scaletest.example.com \"b\" not found"`,
	`list at v1 again: 200 "a":"scaletest.example.com/v1":{"host":"a.example","port":82} "d":"scaletest.example.com/v1":{"host":"d.example","port":2}`,
}
