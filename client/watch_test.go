package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

const (
	evAdded    = `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"11","labels":{"app":"x"}},"data":{"k":"v"}}}`
	evModified = `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"12"}}}`
	evBookmark = `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"13","annotations":{"k8s.io/initial-events-end":"true"}}}}`
	evDeleted  = `{"type":"DELETED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"14"}}}`
	evExpired  = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (10)","reason":"Expired","code":410}}`
)

// streamHandler writes events, flushing after each chunk of chunk bytes
// (0: after each event), then ends the response.
func streamHandler(t *testing.T, seen chan<- *http.Request, chunk int, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			seen <- r
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		fl.Flush()
		for _, ev := range events {
			data := []byte(ev + "\n")
			if chunk == 0 {
				_, _ = w.Write(data)
				fl.Flush()
				continue
			}
			for len(data) > 0 {
				n := min(chunk, len(data))
				if _, err := w.Write(data[:n]); err != nil {
					return
				}
				fl.Flush()
				data = data[n:]
			}
		}
	}
}

func collect[T object.Object](t *testing.T, w Watcher[T]) ([]wire.Event[T], error) {
	t.Helper()
	var out []wire.Event[T]
	for {
		ev, err := w.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestWatchDecodesEventsAndQuery(t *testing.T) {
	for _, chunk := range []int{0, 1} { // 1: the server flushes one byte at a time
		seen := make(chan *http.Request, 1)
		srv := startTLS(t, streamHandler(t, seen, chunk, evAdded, evModified, evBookmark, evDeleted))
		c := newTestClient(t, srv, nil)
		cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
		yes := true
		w, err := cms.Watch(ctxT(t), wire.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true, SendInitialEvents: &yes,
			ResourceVersionMatch: wire.MatchNotOlderThan, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := collect(t, w)
		if err != io.EOF {
			t.Fatalf("chunk %d: end of stream %v, want io.EOF", chunk, err)
		}
		w.Close()
		r := <-seen
		q := r.URL.Query()
		if q.Get("watch") != "true" || q.Get("resourceVersion") != "10" || q.Get("allowWatchBookmarks") != "true" ||
			q.Get("sendInitialEvents") != "true" || q.Has("limit") || r.URL.Path != "/api/v1/namespaces/ns/configmaps" {
			t.Fatalf("watch request %s ? %v", r.URL.Path, q)
		}
		want := []struct {
			typ wire.EventType
			rv  string
		}{{wire.Added, "11"}, {wire.Modified, "12"}, {wire.Bookmark, "13"}, {wire.Deleted, "14"}}
		if len(evs) != len(want) {
			t.Fatalf("chunk %d: %d events", chunk, len(evs))
		}
		for i, w := range want {
			if evs[i].Type != w.typ || evs[i].Object.GetResourceVersion() != w.rv {
				t.Fatalf("chunk %d: event %d = %s %s", chunk, i, evs[i].Type, evs[i].Object.GetResourceVersion())
			}
		}
		if evs[0].Object.GetLabels()["app"] != "x" || evs[2].Object.GetAnnotations()[wire.AnnotationInitialEventsEnd] != "true" {
			t.Fatal("labels or bookmark annotation lost")
		}
	}
}

func TestWatchTypedPods(t *testing.T) {
	pod := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","resourceVersion":"7"},"spec":{"containers":[{"name":"c","image":"busybox"}]},"status":{"phase":"Running"}}}`
	srv := startTLS(t, streamHandler(t, nil, 7, pod, `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}`))
	c := newTestClient(t, srv, nil)
	w, err := NewResource[*testPod](c, pods).Watch(ctxT(t), wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	evs, err := collect(t, w)
	if err != io.EOF || len(evs) != 2 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if evs[0].Object.Spec.Containers[0].Image != "busybox" || evs[0].Object.Status.Phase != "Running" || evs[1].Object.ResourceVersion != "9" {
		t.Fatalf("typed decode lost fields: %+v", evs)
	}
}

func TestWatchErrorEventIsGone(t *testing.T) {
	srv := startTLS(t, streamHandler(t, nil, 0, evAdded, evExpired))
	c := newTestClient(t, srv, nil)
	w, err := NewResource[*object.Unstructured](c, configMaps).Watch(ctxT(t), wire.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	evs, err := collect(t, w)
	if len(evs) != 1 || !IsGone(err) || !IsExpired(err) || wire.CodeOf(err) != 410 {
		t.Fatalf("events %d, err %v; want one event then 410 Expired", len(evs), err)
	}
	if _, again := w.Next(); !IsGone(again) {
		t.Fatalf("Next after the error: %v, want the same error", again)
	}
}

func TestWatchErrorResponse(t *testing.T) {
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, wire.NewResourceExpired("too old resource version: 1 (5)"))
	}))
	c := newTestClient(t, srv, nil)
	_, err := NewResource[*object.Unstructured](c, configMaps).Watch(ctxT(t), wire.ListOptions{ResourceVersion: "1"})
	if !IsExpired(err) {
		t.Fatalf("Watch: %v, want Expired", err)
	}
}

// hangingHandler writes one event and then holds the stream open until
// the client goes away or the test ends.
func hangingHandler(release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte(evAdded + "\n"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

func TestWatchCloseUnblocksNext(t *testing.T) {
	release := make(chan struct{})
	srv := startTLS(t, hangingHandler(release))
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	c := newTestClient(t, srv, nil)
	w, err := NewResource[*object.Unstructured](c, configMaps).Watch(ctxT(t), wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := w.Next(); err != nil || ev.Type != wire.Added {
		t.Fatalf("first Next: %v %v", ev.Type, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Next() // blocks: the server sends nothing more
		done <- err
	}()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != io.EOF {
			t.Fatalf("Next after Close: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not unblock Next")
	}
	_ = w.Close() // idempotent
}

func TestWatchContextCancelEndsNext(t *testing.T) {
	release := make(chan struct{})
	srv := startTLS(t, hangingHandler(release))
	t.Cleanup(func() { close(release) })
	c := newTestClient(t, srv, nil)
	ctx, cancel := context.WithCancel(ctxT(t))
	w, err := NewResource[*object.Unstructured](c, configMaps).Watch(ctx, wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := w.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v, want context.Canceled", err)
	}
}

// Config.Timeout bounds ordinary requests but not watches.
func TestWatchIgnoresRequestTimeout(t *testing.T) {
	send := make(chan struct{})
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-send:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte(evAdded + "\n"))
	}))
	c := newTestClient(t, srv, func(cfg *Config) { cfg.Timeout = 100 * time.Millisecond })
	cms := NewResource[*object.Unstructured](c, configMaps)
	w, err := cms.Watch(ctxT(t), wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// An ordinary request against the same server times out first...
	if _, err := cms.Get(ctxT(t), "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get: %v, want deadline exceeded", err)
	}
	// ...and the watch, open for longer than the timeout, still delivers.
	close(send)
	ev, err := w.Next()
	if err != nil || ev.Type != wire.Added {
		t.Fatalf("Next: %v %v", ev.Type, err)
	}
	if _, err := w.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

func TestWatchRejectsMalformedEvents(t *testing.T) {
	for _, body := range []string{
		`{"type":"SURPRISE","object":{}}`,
		`{"type":"ADDED"}`,
		`{"type":"ADDED","object":[1]}`,
		`{"type":"ADDED","object":{}} garbage`,
	} {
		srv := startTLS(t, streamHandler(t, nil, 0, body))
		c := newTestClient(t, srv, nil)
		w, err := NewResource[*object.Unstructured](c, configMaps).Watch(ctxT(t), wire.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = collect(t, w)
		w.Close()
		if !errors.Is(err, ErrBadEvent) {
			t.Fatalf("%s: %v, want ErrBadEvent", body, err)
		}
		if strings.Contains(body, "garbage") && err == nil {
			t.Fatal("trailing garbage accepted")
		}
	}
}
