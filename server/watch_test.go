package server

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
	"github.com/listwatch/listwatch/wire"
)

// watchStream is an open watch over HTTP.
type watchStream struct {
	t      *testing.T
	resp   *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

func (e *env) watch(p string, hdr ...string) *watchStream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+p, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		e.t.Fatalf("watch %s: %d", p, resp.StatusCode)
	}
	w := &watchStream{t: e.t, resp: resp, sc: bufio.NewScanner(resp.Body), cancel: cancel}
	w.sc.Buffer(nil, 1<<20)
	e.t.Cleanup(w.close)
	return w
}

func (w *watchStream) close() { w.cancel(); w.resp.Body.Close() }

type event struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

// next reads the next event; ok is false at the end of the stream.
func (w *watchStream) next() (event, bool) {
	w.t.Helper()
	if !w.sc.Scan() {
		return event{}, false
	}
	var ev event
	if err := json.Unmarshal(w.sc.Bytes(), &ev); err != nil {
		w.t.Fatalf("bad event line %q: %v", w.sc.Bytes(), err)
	}
	return ev, true
}

func (w *watchStream) expect(typ, name string) event {
	w.t.Helper()
	for {
		ev, ok := w.next()
		if !ok {
			w.t.Fatalf("stream ended waiting for %s %s", typ, name)
		}
		if ev.Type == "BOOKMARK" && typ != "BOOKMARK" {
			continue
		}
		if ev.Type != typ || (name != "" && path(ev.Object, "metadata", "name") != name) {
			w.t.Fatalf("got %s %v, want %s %s", ev.Type, path(ev.Object, "metadata", "name"), typ, name)
		}
		return ev
	}
}

func TestWatchFromListRV(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("before", nil, nil))
	rv := path(e.must(200, "GET", cmPath, nil), "metadata", "resourceVersion").(string)
	w := e.watch(cmPath + "?watch=1&resourceVersion=" + rv)
	e.must(201, "POST", cmPath, cm("a", nil, nil))
	e.must(200, "PATCH", cmPath+"/a", `{"data":{"x":"1"}}`, "Content-Type", "application/merge-patch+json")
	e.must(200, "DELETE", cmPath+"/a", nil)
	w.expect("ADDED", "a")
	if ev := w.expect("MODIFIED", "a"); path(ev.Object, "data", "x") != "1" {
		t.Fatalf("modified: %v", ev.Object)
	}
	w.expect("DELETED", "a")

	// Legacy /watch/ path, one object by name.
	lw := e.watch("/api/v1/watch/namespaces/default/configmaps/before?resourceVersion=" + rv)
	e.must(200, "PATCH", cmPath+"/before", `{"data":{"y":"1"}}`, "Content-Type", "application/merge-patch+json")
	lw.expect("MODIFIED", "before")
	// A field selector beside the name must pin that name, as kube's
	// handler checks ("==" selects everything: the name alone counts).
	for _, sel := range []string{"metadata.name%3Da", "metadata.namespace%3Ddefault", "metadata.name!%3Dbefore"} {
		e.expectStatus(400, "BadRequest", "fieldSelector metadata.name doesn't match requested name",
			"GET", "/api/v1/watch/namespaces/default/configmaps/before?timeoutSeconds=1&fieldSelector="+sel, nil)
	}
	sw := e.watch("/api/v1/watch/namespaces/default/configmaps/before?fieldSelector=%3D%3D&resourceVersion=" + rv)
	e.must(200, "PATCH", cmPath+"/before", `{"data":{"y":"2"}}`, "Content-Type", "application/merge-patch+json")
	sw.expect("MODIFIED", "before")
}

// TestWatchNegativeTimeoutEndsAtOnce: kube's watch with a negative
// timeoutSeconds ends before its first event (serve's watched on, with no
// timeout, or failed its consistent read with a 504).
func TestWatchNegativeTimeoutEndsAtOnce(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("a", nil, nil))
	w := e.watch(cmPath + "?watch=1&timeoutSeconds=-1")
	if ev, ok := w.next(); ok {
		t.Fatalf("event %s %v", ev.Type, ev.Object)
	}
}

func TestWatchLabelSelectorTransitions(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("t", map[string]string{"app": "no"}, nil))
	rv := path(e.must(200, "GET", cmPath, nil), "metadata", "resourceVersion").(string)
	w := e.watch(cmPath + "?watch=1&labelSelector=app%3Dyes&resourceVersion=" + rv)
	e.must(200, "PATCH", cmPath+"/t", `{"metadata":{"labels":{"app":"yes"}}}`, "Content-Type", "application/merge-patch+json")
	w.expect("ADDED", "t")
	p := e.must(200, "PATCH", cmPath+"/t", `{"metadata":{"labels":{"app":"no"}}}`, "Content-Type", "application/merge-patch+json")
	ev := w.expect("DELETED", "t")
	if path(ev.Object, "metadata", "resourceVersion") != path(p, "metadata", "resourceVersion") {
		t.Fatalf("DELETED at rv %v, update at %v", path(ev.Object, "metadata", "resourceVersion"), path(p, "metadata", "resourceVersion"))
	}
}

func TestWatchTimeoutEndsCleanly(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	w := e.watch(cmPath + "?watch=1&timeoutSeconds=1")
	for {
		ev, ok := w.next()
		if !ok {
			break
		}
		if ev.Type == "ERROR" {
			t.Fatalf("error event at timeout: %v", ev.Object)
		}
	}
	if el := time.Since(start); el < 900*time.Millisecond || el > 10*time.Second {
		t.Fatalf("watch lasted %v", el)
	}
}

func TestWatchMinRequestTimeout(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinRequestTimeout = time.Second })
	start := time.Now()
	w := e.watch(cmPath + "?watch=1")
	for _, ok := w.next(); ok; _, ok = w.next() {
	}
	if el := time.Since(start); el < time.Second || el > 10*time.Second {
		t.Fatalf("watch lasted %v, want [1s, 2s)", el)
	}
}

func TestWatchSendInitialEvents(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("i1", nil, nil))
	e.must(201, "POST", cmPath, cm("i2", nil, nil))
	w := e.watch(cmPath + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	w.expect("ADDED", "i1")
	w.expect("ADDED", "i2")
	var bm event
	for {
		ev, ok := w.next()
		if !ok {
			t.Fatal("no end bookmark")
		}
		if ev.Type == "BOOKMARK" && path(ev.Object, "metadata", "annotations", "k8s.io/initial-events-end") == "true" {
			bm = ev
			break
		}
	}
	md := bm.Object["metadata"].(map[string]any)
	if bm.Object["kind"] != "ConfigMap" || bm.Object["apiVersion"] != "v1" || md["resourceVersion"] == "" || md["name"] != nil || len(bm.Object) != 3 || len(md) != 2 {
		t.Fatalf("end bookmark shape: %v", bm.Object)
	}
	e.must(201, "POST", cmPath, cm("i3", nil, nil))
	w.expect("ADDED", "i3")
}

func TestWatchCompactedIsExpiredEvent(t *testing.T) {
	e := newEnv(t)
	first := path(e.must(201, "POST", cmPath, cm("c1", nil, nil)), "metadata", "resourceVersion").(string)
	e.must(201, "POST", cmPath, cm("c2", nil, nil))
	e.must(201, "POST", cmPath, cm("c3", nil, nil))
	cur, err := e.store.CurrentRevision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Compact(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
	w := e.watch(cmPath + "?watch=1&resourceVersion=" + first)
	ev, ok := w.next()
	if !ok || ev.Type != "ERROR" {
		t.Fatalf("got %v %v, want ERROR", ev, ok)
	}
	if ev.Object["code"] != float64(410) || ev.Object["reason"] != "Expired" || !strings.HasPrefix(ev.Object["message"].(string), "too old resource version: "+first+" (") {
		t.Fatalf("error event: %v", ev.Object)
	}
	if _, ok := w.next(); ok {
		t.Fatal("stream continued after ERROR")
	}
}

// scriptedReader is a ListWatcher whose watches replay fixed events, to
// test how the server renders what a reader sends independent of the
// reader (the watch cache sends bookmarks and frames on its own timers).
type scriptedReader struct {
	storage.ListWatcher
	events []storage.WatchEvent
}

func (r scriptedReader) WatchList(ctx context.Context, prefix string, o storage.WatchOptions) (storage.EventStream, error) {
	return &scriptedStream{events: r.events}, nil
}

type scriptedStream struct{ events []storage.WatchEvent }

func (s *scriptedStream) Next(ctx context.Context) (storage.WatchEvent, error) {
	if len(s.events) == 0 {
		return storage.WatchEvent{}, storage.ErrWatchClosed
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *scriptedStream) Close() {}

func TestWatchRendersBookmarksAndFrames(t *testing.T) {
	et := etcdtest.Start(t)
	frame := []byte(`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"framed","resourceVersion":"7"}}}` + "\n")
	reader := scriptedReader{ListWatcher: direct.New(et.Store), events: []storage.WatchEvent{
		{Type: wire.Bookmark, Revision: 5},
		{Type: wire.Added, Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"plain","resourceVersion":"6"}}`), Revision: 6},
		{Type: wire.Added, Frame: frame, Object: []byte(`{"ignored":true}`), Revision: 7},
		{Type: wire.Bookmark, Revision: 7, InitialEventsEnd: true},
	}}
	e := startEnv(t, et.Store, et, func(c *Config) { c.Reader = reader })

	w := e.watch(cmPath + "?watch=1&allowWatchBookmarks=true")
	if ev := w.expect("BOOKMARK", ""); ev.Object["kind"] != "ConfigMap" || path(ev.Object, "metadata", "resourceVersion") != "5" || path(ev.Object, "metadata", "annotations") != nil {
		t.Fatalf("bookmark: %v", ev.Object)
	}
	w.expect("ADDED", "plain")
	w.expect("ADDED", "framed")
	if ev := w.expect("BOOKMARK", ""); path(ev.Object, "metadata", "annotations", "k8s.io/initial-events-end") != "true" {
		t.Fatalf("end bookmark: %v", ev.Object)
	}
	if _, ok := w.next(); ok {
		t.Fatal("stream did not end with the reader's")
	}
	// Without allowWatchBookmarks no bookmark is sent.
	w2 := e.watch(cmPath + "?watch=1")
	for ev, ok := w2.next(); ok; ev, ok = w2.next() {
		if ev.Type == "BOOKMARK" {
			t.Fatal("bookmark sent to a client that did not ask")
		}
	}
}

func TestWatchTable(t *testing.T) {
	e := newEnv(t)
	rv := path(e.must(200, "GET", cmPath, nil), "metadata", "resourceVersion").(string)
	w := e.watch(cmPath+"?watch=1&resourceVersion="+rv, "Accept", tableAccept)
	e.must(201, "POST", cmPath, cm("tw", nil, map[string]string{"a": "b"}))
	ev, ok := w.next()
	if !ok || ev.Type != "ADDED" || ev.Object["kind"] != "Table" {
		t.Fatalf("table event: %v", ev)
	}
	row := ev.Object["rows"].([]any)[0].(map[string]any)
	if row["cells"].([]any)[0] != "tw" || path(row["object"].(map[string]any), "kind") != "PartialObjectMetadata" {
		t.Fatalf("row: %v", row)
	}
}

// TestWatchTableHeadersOnce: as kube's, a Table watch sends the column
// definitions in its first event only; the Tables of the events after it,
// bookmarks too, have "columnDefinitions": null.
func TestWatchTableHeadersOnce(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("h1", map[string]string{"t": "h"}, nil))
	e.must(201, "POST", cmPath, cm("h2", map[string]string{"t": "h"}, nil))
	w := e.watch(cmPath+"?watch=1&labelSelector=t%3Dh&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "Accept", tableAccept)
	for i, typ := range []string{"ADDED", "ADDED", "BOOKMARK"} {
		ev, ok := w.next()
		if !ok || ev.Type != typ || ev.Object["kind"] != "Table" {
			t.Fatalf("event %d: %v, want a %s Table", i, ev, typ)
		}
		cols, present := ev.Object["columnDefinitions"]
		if c, _ := cols.([]any); i == 0 && len(c) == 0 || i > 0 && (!present || cols != nil) {
			t.Errorf("event %d (%s): columnDefinitions %v (present %t)", i, typ, cols, present)
		}
	}
}

// traceLog keeps the trace name of every "slow operation" record.
type traceLog struct {
	mu     sync.Mutex
	traces []string
}

func (h *traceLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *traceLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *traceLog) WithGroup(string) slog.Handler            { return h }
func (h *traceLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "slow operation" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "trace" {
			h.mu.Lock()
			h.traces = append(h.traces, a.Value.String())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestWatchIsNotASlowOperation: as in kube, a watch is not logged as a
// slow operation when it ends, however long it lasted; other requests
// past the threshold are.
func TestWatchIsNotASlowOperation(t *testing.T) {
	log := &traceLog{}
	e := newEnv(t, func(c *Config) {
		c.Logger = slog.New(log)
		c.SlowThreshold = time.Nanosecond // every request is slow
	})
	if r := e.do("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", nil); r.code != 200 {
		t.Fatalf("watch: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/api/v1/namespaces/default/configmaps", nil); r.code != 200 {
		t.Fatalf("list: %d %s", r.code, r.body)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if !slices.Equal(log.traces, []string{"List"}) {
		t.Fatalf("slow operations logged: %q, want only the list's", log.traces)
	}
}

// TestInitialEventsFlushedWithoutBookmark: a watch's initial events reach
// the client at once when no bookmark ends them (the watch does not allow
// bookmarks), for a built-in and a custom resource (read from etcd
// directly, the test server's reader); and that a Table watch gets the
// bookmark that ends them as a Table.
// Each watch is given ten seconds before it is cut, far less than its
// timeoutSeconds, whose end would flush everything anyway.
func TestInitialEventsFlushedWithoutBookmark(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, gadgetCRD(t, gadgetSchema, nil))
	e.must(201, "POST", gadgets, gadget("a", `{"name":"abc"}`))
	e.must(201, "POST", cmPath, cm("a", nil, nil))
	for _, p := range []string{cmPath, gadgets} {
		for _, tc := range []struct{ query, accept string }{
			{"&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", ""},
			{"", ""}, // kube's default for a watch from "now": the same
			{"&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", "application/json;as=Table;g=meta.k8s.io;v=v1"},
		} {
			w := e.watch(p+"?watch=1&timeoutSeconds=600"+tc.query, "Accept", tc.accept)
			cut := time.AfterFunc(10*time.Second, w.cancel)
			ev := w.expect("ADDED", "")
			cut.Stop()
			if tc.accept == "" && path(ev.Object, "metadata", "name") != "a" {
				t.Fatalf("%s%s: %v", p, tc.query, ev.Object)
			}
			if tc.accept != "" {
				// The bookmark ending them comes as a Table too, its row's
				// object the bookmark's metadata, as kube sends it.
				end := w.expect("BOOKMARK", "")
				rows, _ := end.Object["rows"].([]any)
				if ev.Object["kind"] != "Table" || end.Object["kind"] != "Table" || len(rows) != 1 ||
					path(rows[0].(map[string]any), "object", "metadata", "annotations", wire.AnnotationInitialEventsEnd) != "true" {
					t.Fatalf("%s%s: %v then %v", p, tc.query, ev.Object, end.Object)
				}
			}
			w.close()
		}
	}
}

// TestWatchPathIgnoresContinue: a watch on a deprecated /watch/ path
// drops a continue token unread, as kube's (whose store's watch never
// reads it), a bad one and one beside a resourceVersion too, where a
// list refuses them; a list's rules about it still hold there.
func TestWatchPathIgnoresContinue(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("c", map[string]string{"t": "c"}, nil))
	e.expectStatus(400, "BadRequest", "", "GET", cmPath+"?continue=bogus", nil)
	watchPath := "/api/v1/watch/namespaces/default/configmaps"
	for _, q := range []string{"continue=bogus", "continue=bogus&resourceVersion=1", "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAsInN0YXJ0IjoiYiJ9"} {
		w := e.watch(watchPath + "?labelSelector=t%3Dc&" + q)
		w.expect("ADDED", "c")
		w.close()
	}
	e.expectStatus(422, "Invalid", "", "GET", watchPath+"?continue=bogus&resourceVersionMatch=NotOlderThan", nil)
}
