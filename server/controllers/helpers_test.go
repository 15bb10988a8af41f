package controllers_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/server/internal/testsupport/faultproxy"
	"github.com/listwatch/listwatch/wire"
)

type u = *object.Unstructured

var (
	nsGVR  = client.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cmGVR  = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	saGVR  = client.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	secGVR = client.GroupVersionResource{Version: "v1", Resource: "secrets"}
	crdGVR = client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	wGVR   = client.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// bare starts a server that runs no controller, and an admin client of
// it: the tests run controller hosts of their own against it.
func bare(t *testing.T) (*apiservertest.Server, *client.Client) {
	t.Helper()
	s := apiservertest.Start(t, "", func(o *apiserver.Options) { o.Controllers = []string{} })
	return s, newClient(t, s, s.URL(), nil)
}

func newClient(t *testing.T, s *apiservertest.Server, url string, wrap func(http.RoundTripper) http.RoundTripper) *client.Client {
	t.Helper()
	creds := s.Credentials()
	c, err := client.New(&client.Config{
		Host: url, CAData: creds.CAPEM, CertData: creds.AdminCertPEM, KeyData: creds.AdminKeyPEM,
		QPS: -1, Timeout: 20 * time.Second, WrapTransport: wrap,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// faulty is a client of s through a proxy that drops connections (watches
// included) with probability drop per chunk, and whose requests fail with
// a 500 one time in failEvery (0: never) before reaching the server.
func faulty(t *testing.T, s *apiservertest.Server, drop float64, failEvery int) *client.Client {
	t.Helper()
	addr := s.URL()[len("https://"):]
	p, err := faultproxy.New(addr, faultproxy.Options{Seed: 7, Faults: faultproxy.Faults{Drop: drop}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var mu sync.Mutex
	n := 0
	return newClient(t, s, "https://"+p.Addr(), wrapFunc(func(*http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		n++
		return failEvery > 0 && n%failEvery == 0
	}))
}

// wrapFunc wraps a transport so that the requests fail says so are
// answered with a 500 Status before they reach the server.
func wrapFunc(fail func(*http.Request) bool) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if !fail(r) {
				return next.RoundTrip(r)
			}
			if r.Body != nil {
				r.Body.Close()
			}
			return &http.Response{
				StatusCode: 500, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
				Header: http.Header{"Content-Type": {"application/json"}},
				Body:   io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected","reason":"InternalError","code":500}`)),
			}, nil
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// runHost runs a controller host of the named controllers on c until the
// test ends.
func runHost(t *testing.T, c *client.Client, cfg controllers.Config) *controllers.Host {
	t.Helper()
	h, _ := runHostStop(t, c, cfg)
	return h
}

// runHostStop is runHost, with a function that stops the host and waits
// for it.
func runHostStop(t *testing.T, c *client.Client, cfg controllers.Config) (*controllers.Host, func()) {
	t.Helper()
	cfg.Client = c
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	h, err := controllers.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("host Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return h, stop
}

func testLogger() *slog.Logger {
	if os.Getenv("LISTWATCH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func res(c *client.Client, gvr client.GroupVersionResource) *client.Resource[u] {
	return client.NewResource[u](c, gvr).JSONOnly()
}

func obj(apiVersion, kind, name string, fields map[string]any) u {
	o := &object.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		o.Object[k] = v
	}
	o.SetName(name)
	return o
}

func mustCreate(t *testing.T, r *client.Resource[u], o u) u {
	t.Helper()
	out, err := r.Create(t.Context(), o)
	if err != nil {
		t.Fatalf("create %s: %v", o.GetName(), err)
	}
	return out
}

// watchUntil watches r (narrowed to name) until done says an event is
// the one awaited, or the deadline passes.
func watchUntil(t *testing.T, r *client.Resource[u], name string, done func(wire.Event[u]) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		w, err := r.Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=" + name, AllowWatchBookmarks: false})
		if err != nil {
			continue
		}
		for {
			ev, err := w.Next()
			if err != nil {
				break
			}
			if done(ev) {
				w.Close()
				return
			}
		}
		w.Close()
	}
	t.Fatalf("watch of %s: %v", name, context.Cause(ctx))
}

// waitGone returns once r has no object name: at once if a GET says so,
// else at the DELETED event of a watch from the version that GET read.
func waitGone(t *testing.T, r *client.Resource[u], name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		cur, err := r.Get(ctx, name)
		if client.IsNotFound(err) {
			return
		}
		if err != nil {
			continue
		}
		w, err := r.Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: cur.GetResourceVersion()})
		if err != nil {
			continue
		}
		for {
			ev, err := w.Next()
			if err != nil {
				break
			}
			if ev.Type == wire.Deleted {
				w.Close()
				return
			}
		}
		w.Close()
	}
	t.Fatalf("%s still there: %v", name, context.Cause(ctx))
}

// waitFor polls nothing: it watches r for name and returns the first
// state of it that ok accepts, the object's initial state included.
func waitFor(t *testing.T, r *client.Resource[u], name string, ok func(u) bool) u {
	t.Helper()
	var got u
	watchUntil(t, r, name, func(ev wire.Event[u]) bool {
		if ev.Type != wire.Added && ev.Type != wire.Modified {
			return false
		}
		if ok(ev.Object) {
			got = ev.Object
			return true
		}
		return false
	})
	return got
}

func widgetCRD() u {
	return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", map[string]any{
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	})
}
