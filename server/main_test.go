package server

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/go-logr/logr"
	"io"
	"k8s.io/klog/v2"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

func TestMain(m *testing.M) {
	// Kubernetes' libraries inside the server log through klog; serve
	// sends it to its slog log, tests nowhere.
	klog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m,
		// etcd's and grpc's long-lived helpers outlive a single test's
		// cleanup by design.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		// kube's mutating admission policy plugin polls the OpenAPI every
		// 5s and sees that it was stopped only at its next poll.
		goleak.IgnoreAnyFunction("k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch.(*typeConverterManager).Run"),
	)
}

// env is one server on a fresh embedded etcd, served over real HTTP on
// 127.0.0.1, with Run going.
type env struct {
	t     *testing.T
	etcd  *etcdtest.Etcd
	srv   *Server
	http  *httptest.Server
	url   string
	store storage.Interface
	stop  func()
}

type envOption func(*Config)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := etcdtest.Start(t)
	return startEnv(t, e.Store, e, opts...)
}

func startEnv(t *testing.T, store storage.Interface, e *etcdtest.Etcd, opts ...envOption) *env {
	t.Helper()
	env := startEnvNoCleanup(t, store, opts...)
	env.etcd = e
	t.Cleanup(env.stop)
	return env
}

// startEnvNoCleanup starts a server whose stop the caller runs.
func startEnvNoCleanup(t *testing.T, store storage.Interface, opts ...envOption) *env {
	t.Helper()
	cfg := Config{Store: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	var reader *direct.Reader
	if cfg.Reader == nil && cfg.Readers == nil {
		reader = direct.New(store) // as apiserver does with the watch cache off
		cfg.Reader = reader
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		if reader != nil {
			_ = reader.Run(ctx)
		}
	}()
	go func() { done <- srv.Run(ctx) }()
	hs := httptest.NewServer(request.WithRequestInfo(srv.Handler()))
	env := &env{t: t, srv: srv, http: hs, url: hs.URL, store: store}
	env.stop = func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		<-readerDone
	}
	select {
	case <-srv.booted:
	case <-time.After(30 * time.Second):
		env.stop()
		t.Fatal("server did not boot")
	}
	return env
}

// response is a finished HTTP exchange.
type response struct {
	code int
	body []byte
	hdr  http.Header
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response %d is not JSON: %v: %s", r.code, err, r.body)
	}
	return m
}

// do sends one request; body may be nil, a string, or a value to marshal.
func (e *env) do(method, path string, body any, hdr ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		bs, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(bs)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{code: resp.StatusCode, body: b, hdr: resp.Header}
}

// expectNoRoute checks that path has no route outside kube's built-in
// API: Go's plain 404, as kube-apiserver answers it (writeNoRoute).
func (e *env) expectNoRoute(method, path string) {
	e.t.Helper()
	if r := e.do(method, path, nil); r.code != 404 || string(r.body) != "404 page not found\n" {
		e.t.Fatalf("%s %s: %d %s, want Go's plain 404", method, path, r.code, r.body)
	}
}

// must checks the status code and returns the decoded body.
func (e *env) must(code int, method, path string, body any, hdr ...string) map[string]any {
	e.t.Helper()
	r := e.do(method, path, body, hdr...)
	if r.code != code {
		e.t.Fatalf("%s %s: got %d, want %d: %s", method, path, r.code, code, r.body)
	}
	return r.json(e.t)
}

// expectStatus checks a failed request's code, reason and (if not empty)
// message.
func (e *env) expectStatus(code int, reason, msg string, method, path string, body any, hdr ...string) map[string]any {
	e.t.Helper()
	m := e.must(code, method, path, body, hdr...)
	if m["kind"] != "Status" || m["reason"] != reason || int(m["code"].(float64)) != code {
		e.t.Fatalf("%s %s: got %v", method, path, m)
	}
	if msg != "" && m["message"] != msg {
		e.t.Fatalf("%s %s: message %q, want %q", method, path, m["message"], msg)
	}
	return m
}

func cm(name string, labels map[string]string, data map[string]string) map[string]any {
	md := map[string]any{"name": name}
	if labels != nil {
		md["labels"] = labels
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}
}

func path(m map[string]any, p ...string) any {
	var cur any = m
	for _, k := range p {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

var storageListAll = storage.ListOptions{}

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// benchEnv is an env for benchmarks, with the etcd client for raw reads.
type benchEnv struct {
	url        string
	store      storage.Interface
	etcdClient *clientv3.Client
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	et := etcdtest.Start(b)
	srv, err := New(Config{Store: et.Store, Reader: direct.New(et.Store), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	return &benchEnv{url: hs.URL, store: et.Store, etcdClient: et.Client}
}
