package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/cache"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/wire"
)

// TestValueTooLargeIs413: a JSON patch with a small body that grows the
// object past what etcd takes is kube's 413, not a 500.
func TestValueTooLargeIs413(t *testing.T) {
	e := newEnv(t)
	// A custom resource: kube's validation caps a ConfigMap at 1 MiB.
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	big := strings.Repeat("x", 1450<<10) // 1.4 MiB
	w := widget("big", "v1")
	w["data"] = map[string]string{"a": big}
	e.must(201, "POST", widgets, w)
	// 2.8 MiB copied: kube's JSON patch copies at most 3 MiB (422 beyond).
	p := `[{"op":"copy","from":"/data/a","path":"/data/b"},{"op":"copy","from":"/data/a","path":"/data/c"}]`
	m := e.expectStatus(413, "RequestEntityTooLarge", "", "PATCH", widgets+"/big", p, "Content-Type", "application/json-patch+json")
	if !strings.HasPrefix(m["message"].(string), "Request entity too large: ") {
		t.Fatalf("message %q", m["message"])
	}
}

// TestTooLargeResourceVersionIs504: a LIST at a revision the store has not
// reached is kube's 504 with "Timeout: Too large resource version: R, current: C",
// its cause, and Retry-After.
func TestTooLargeResourceVersionIs504(t *testing.T) {
	e := newEnv(t)
	n, future := e.aheadRV()
	for _, q := range []string{"resourceVersionMatch=NotOlderThan&", ""} {
		r := e.do("GET", fmt.Sprintf("%s?%sresourceVersion=%d", cmPath, q, future), nil)
		m := r.json(t)
		if msg, _ := m["message"].(string); !isTooLarge(msg, future, n) || r.code != 504 || m["reason"] != "Timeout" {
			t.Fatalf("%q: %d %v", q, r.code, m)
		}
		if cause := path(m, "details", "causes"); cause == nil || r.hdr.Get("Retry-After") != "1" {
			t.Fatalf("%q: causes %v, Retry-After %q", q, cause, r.hdr.Get("Retry-After"))
		}
	}
}

// TestTooLargeWatchListIsErrorEvent: a watch-list (initial events from a
// state not older than its resourceVersion) at a revision the store does
// not reach starts and sends kube's 504 as its one ERROR event, as kube's
// cacher does. (The test server reads etcd directly, which refuses a
// future revision at once; the watch cache's wait ending with the watch's
// timeoutSeconds is TestWatchCompacted's and TestCacheSetWatchListDeadline's.)
func TestTooLargeWatchListIsErrorEvent(t *testing.T) {
	e := newEnv(t)
	n, future := e.aheadRV()
	for _, timeout := range []string{"", "&timeoutSeconds=1"} {
		w := e.watch(fmt.Sprintf("%s?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=%d%s", cmPath, future, timeout))
		ev, ok := w.next()
		if msg, _ := ev.Object["message"].(string); !isTooLarge(msg, future, n) ||
			!ok || ev.Type != "ERROR" || ev.Object["code"] != float64(504) || ev.Object["reason"] != "Timeout" {
			t.Fatalf("%q: %v %s %v", timeout, ok, ev.Type, ev.Object)
		}
		if ev, ok := w.next(); ok {
			t.Fatalf("%q: stream went on with %s %v", timeout, ev.Type, ev.Object)
		}
	}
}

// aheadRV returns the store's resourceVersion and one far ahead of it.
func (e *env) aheadRV() (cur, ahead int64) {
	e.t.Helper()
	rv := path(e.must(200, "GET", cmPath, nil), "metadata", "resourceVersion").(string)
	cur, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		e.t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return cur, cur + 1000
}

// isTooLarge: msg is kube's message for a read at req that the store, at
// least at cur, has not reached.
func isTooLarge(msg string, req, cur int64) bool {
	var gotReq, gotCur int64
	_, err := fmt.Sscanf(msg, "Timeout: Too large resource version: %d, current: %d", &gotReq, &gotCur)
	return err == nil && gotReq == req && gotCur >= cur
}

// TestWatchEndsCleanlyOnReaderClose: a reader that ends a watch with an
// error wrapping storage.ErrWatchClosed (the cache's slow-watcher and
// re-list endings) closes the stream with no ERROR event, so the client
// resumes from its last resourceVersion instead of re-listing.
func TestWatchEndsCleanlyOnReaderClose(t *testing.T) {
	for _, end := range []error{cache.ErrWatcherTooSlow, cache.ErrRelisted, storage.ErrWatchClosed} {
		t.Run(end.Error(), func(t *testing.T) {
			reader := endingReader{ListWatcher: direct.New(nil), end: end}
			e := newEnv(t, func(c *Config) { c.Reader = reader })
			w := e.watch(cmPath + "?watch=1&resourceVersion=1")
			w.expect("ADDED", "only")
			if ev, ok := w.next(); ok {
				t.Fatalf("stream went on with %s %v", ev.Type, ev.Object)
			}
		})
	}
}

type endingReader struct {
	storage.ListWatcher
	end error
}

func (r endingReader) WatchList(context.Context, string, storage.WatchOptions) (storage.EventStream, error) {
	return &endingStream{end: r.end}, nil
}

type endingStream struct {
	end  error
	sent bool
}

func (s *endingStream) Next(context.Context) (storage.WatchEvent, error) {
	if s.sent {
		return storage.WatchEvent{}, s.end
	}
	s.sent = true
	return storage.WatchEvent{Type: wire.Added, Revision: 2,
		Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"only","resourceVersion":"2"}}`)}, nil
}

func (s *endingStream) Close() {}

// TestBackendErrorIsKubes: an etcd error no storage error stands for
// (a request that timed out, a leader that changed, no space) is
// answered as kube-apiserver answers it: its registry passes etcd's
// error up as it is, and ErrorToAPIStatus makes it a 500 with no reason
// and the error's text (kubectl prints "Error from server:
// etcdserver: request timed out", not an InternalError).
func TestBackendErrorIsKubes(t *testing.T) {
	r := &resource{}
	for _, etcdErr := range []error{rpctypes.ErrTimeout, rpctypes.ErrLeaderChanged, rpctypes.ErrNoSpace, rpctypes.ErrTooManyRequests} {
		kube := responsewriters.ErrorToAPIStatus(etcdErr)
		got, ok := storageError(fmt.Errorf("writing: %w", &storage.BackendError{Err: etcdErr}), r, "x").(*wire.Status)
		if !ok {
			t.Fatalf("%v: not a Status", etcdErr)
		}
		if got.Code != kube.Code || string(got.Reason) != string(kube.Reason) || got.Message != kube.Message || got.Status != kube.Status || got.Details != nil {
			t.Errorf("%v: ours %d %q %q, kube's %d %q %q", etcdErr, got.Code, got.Reason, got.Message, kube.Code, kube.Reason, kube.Message)
		}
	}
	// A context that ended is the request's timeout, not the store's.
	st := storageError(&storage.BackendError{Err: context.DeadlineExceeded}, r, "x").(*wire.Status)
	if st.Code != 504 {
		t.Fatalf("deadline: %d %q", st.Code, st.Reason)
	}
}
