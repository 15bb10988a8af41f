package garbagecollector_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/server/controllers/garbagecollector"
	"github.com/listwatch/listwatch/server/internal/testsupport/faultproxy"
	"github.com/listwatch/listwatch/wire"
)

var (
	cmGVR     = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nsGVR     = client.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	eventGVR  = client.GroupVersionResource{Version: "v1", Resource: "events"}
	crdGVR    = client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = client.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgetGVR = client.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
)

// quiet discards logs; set LISTWATCH_GC_LOG=1 to see them.
var quiet = slog.New(slog.DiscardHandler)

// env is one server, a direct client for the test's own reads and writes,
// and a garbage collector running against the server (through a fault
// proxy when the test asks for one).
type env struct {
	direct *client.Client
	proxy  *faultproxy.Proxy
	gc     *garbagecollector.Controller
	reg    *prometheus.Registry
	// patience bounds every wait; default 20s.
	patience time.Duration
}

func newEnv(t *testing.T, withProxy bool) *env {
	t.Helper()
	srv := apiservertest.Start(t, "")
	cfg, err := client.LoadKubeconfig(srv.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Timeout, cfg.Logger = -1, 30*time.Second, quiet
	direct, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.CloseIdleConnections)
	e := &env{direct: direct, reg: prometheus.NewRegistry(), patience: 20 * time.Second}
	gcCfg := *cfg
	if withProxy {
		u, err := url.Parse(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		if e.proxy, err = faultproxy.New(u.Host, faultproxy.Options{Seed: 7}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = e.proxy.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		gcCfg.Host = "https://" + e.proxy.Addr()
		gcCfg.Timeout = 5 * time.Second
	}
	gcClient, err := client.New(&gcCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gcClient.CloseIdleConnections)
	e.gc, err = garbagecollector.New(garbagecollector.Config{Client: gcClient, Logger: quiet, Registerer: e.reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.gc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	e.waitFor(t, "initial sync", e.gc.IsSynced)
	return e
}

// waitFor polls cond, a real condition, until a deadline.
func (e *env) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(e.patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %v", what, e.patience)
		}
		time.Sleep(10 * time.Millisecond) // polling a real condition, with a deadline
	}
}

func (e *env) res(gvr client.GroupVersionResource, ns string) *client.Resource[*object.Unstructured] {
	return client.NewResource[*object.Unstructured](e.direct, gvr).Namespace(ns)
}

func (e *env) namespace(t *testing.T, name string) {
	t.Helper()
	ns := &object.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := e.res(nsGVR, "").Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
}

// ref is an ownerReference to obj.
func ref(obj *object.Unstructured, block bool) map[string]any {
	r := map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(), "name": obj.GetName(), "uid": obj.GetUID()}
	if block {
		r["blockOwnerDeletion"] = true
	}
	return r
}

// create writes an object of gvr named name with the given owners.
func (e *env) create(t *testing.T, gvr client.GroupVersionResource, apiVersion, kind, ns, name string, owners ...map[string]any) *object.Unstructured {
	t.Helper()
	md := map[string]any{"name": name}
	if len(owners) > 0 {
		refs := make([]any, len(owners))
		for i, o := range owners {
			refs[i] = o
		}
		md["ownerReferences"] = refs
	}
	u := &object.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}}
	out, err := e.res(gvr, ns).Create(t.Context(), u)
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	// Objects decoded from a create answer carry apiVersion and kind.
	return out
}

func (e *env) cm(t *testing.T, ns, name string, owners ...map[string]any) *object.Unstructured {
	t.Helper()
	return e.create(t, cmGVR, "v1", "ConfigMap", ns, name, owners...)
}

func (e *env) del(t *testing.T, gvr client.GroupVersionResource, ns, name, policy string) {
	t.Helper()
	opts := wire.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	if _, err := e.res(gvr, ns).Delete(t.Context(), name, opts); err != nil {
		t.Fatalf("delete %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

// exists reports whether the object is there; a failed read fails the test.
func (e *env) exists(t *testing.T, gvr client.GroupVersionResource, ns, name string) bool {
	t.Helper()
	_, err := e.res(gvr, ns).Get(t.Context(), name)
	if client.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return true
}

func (e *env) waitGone(t *testing.T, gvr client.GroupVersionResource, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		e.waitFor(t, fmt.Sprintf("%s %s/%s gone", gvr.Resource, ns, n), func() bool { return !e.exists(t, gvr, ns, n) })
	}
}

// ownerUIDs reads an object's ownerReferences' uids.
func (e *env) ownerUIDs(t *testing.T, gvr client.GroupVersionResource, ns, name string) []string {
	t.Helper()
	u, err := e.res(gvr, ns).Get(t.Context(), name)
	if err != nil {
		t.Fatalf("get %s/%s: %v", ns, name, err)
	}
	v, _ := u.Nested("metadata", "ownerReferences")
	list, _ := v.([]any)
	var out []string
	for _, r := range list {
		m, _ := r.(map[string]any)
		s, _ := m["uid"].(string)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// crd creates a CRD of group example.com and waits until it is served.
func (e *env) crd(t *testing.T, plural, kind, scope string) {
	t.Helper()
	u := &object.Unstructured{}
	body := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"%s.example.com"},
		"spec":{"group":"example.com","scope":%q,"names":{"plural":%q,"singular":%q,"kind":%q},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`,
		plural, scope, plural, strings.ToLower(kind), kind)
	if err := u.UnmarshalJSON([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.res(crdGVR, "").Create(t.Context(), u); err != nil && !client.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	gvr := client.GroupVersionResource{Group: "example.com", Version: "v1", Resource: plural}
	e.waitFor(t, plural+" served", func() bool {
		_, err := e.res(gvr, "").List(t.Context(), wire.ListOptions{Limit: 1})
		return err == nil
	})
}

// deletions watches a namespace's configmaps and returns the names in the
// order their DELETED events came, once want names have been deleted.
type deletions struct {
	w    client.Watcher[*object.Unstructured]
	errc chan error
	seen chan string
}

func (e *env) watchDeletions(t *testing.T, gvr client.GroupVersionResource, ns string) *deletions {
	t.Helper()
	list, err := e.res(gvr, ns).List(t.Context(), wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.res(gvr, ns).Watch(t.Context(), wire.ListOptions{ResourceVersion: list.Metadata.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	d := &deletions{w: w, errc: make(chan error, 1), seen: make(chan string, 100)}
	go func() {
		for {
			ev, err := w.Next()
			if err != nil {
				d.errc <- err
				close(d.seen)
				return
			}
			if ev.Type == wire.Deleted {
				d.seen <- ev.Object.GetName()
			}
		}
	}()
	t.Cleanup(func() { w.Close(); <-d.errc })
	return d
}

// next returns the next n deleted names.
func (d *deletions) next(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	timeout := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case name, ok := <-d.seen:
			if !ok {
				t.Fatalf("watch ended after %v", out)
			}
			out = append(out, name)
		case <-timeout:
			t.Fatalf("deletions: got %v, want %d", out, n)
		}
	}
	return out
}
