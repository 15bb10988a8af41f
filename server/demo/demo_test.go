package demo_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/demo"
	"github.com/listwatch/listwatch/wire"
)

func TestRunPlaysTheScript(t *testing.T) {
	c := startServer(t)
	var mu sync.Mutex
	var events, actions, steps []string
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := demo.Run(ctx, demo.Config{
		Client: c,
		Logger: quiet,
		OnEvent: func(typ string, o *object.Unstructured) {
			mu.Lock()
			events = append(events, typ+" "+object.Key(o))
			mu.Unlock()
		},
		OnReconcile: func(key, action string) {
			mu.Lock()
			actions = append(actions, key+": "+action)
			mu.Unlock()
		},
		OnStep: func(s string) { steps = append(steps, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// No other writer touches the namespace, so the events are exactly
	// these, in this order.
	want := []string{
		"Add default/demo", "Add default/demo-mirror",
		"Update default/demo", "Update default/demo-mirror",
		"Delete default/demo-mirror", "Add default/demo-mirror",
		"Delete default/demo", "Delete default/demo-mirror",
	}
	if !slices.Equal(events, want) {
		t.Errorf("events\n%q\nwant\n%q", events, want)
	}
	var did []string
	for _, a := range actions {
		if !strings.HasSuffix(a, demo.ActionInSync) && !strings.HasSuffix(a, demo.ActionNoop) {
			did = append(did, a)
		}
	}
	wantDid := []string{
		"default/demo: created mirror", "default/demo: updated mirror",
		"default/demo: created mirror", "default/demo: deleted mirror",
	}
	if !slices.Equal(did, wantDid) {
		t.Errorf("actions %q, want %q", did, wantDid)
	}
	if len(steps) != 4 {
		t.Errorf("steps %q", steps)
	}
	if sum.Events != len(want) || sum.Errors != 0 || sum.Reconciles < len(wantDid) || sum.Reconciles != len(actions) {
		t.Errorf("summary %+v with %d actions", sum, len(actions))
	}
	if !strings.HasPrefix(sum.String(), "demo done: 8 events, ") {
		t.Errorf("summary line %q", sum.String())
	}
	// Nothing is left behind.
	cms := client.NewResource[*object.Unstructured](c, demo.ConfigMapsGVR).Namespace("default")
	list, err := cms.List(ctx, wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Items {
		if strings.HasPrefix(o.GetName(), "demo") {
			t.Errorf("left behind: %s", object.Key(o))
		}
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	c := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := demo.Run(ctx, demo.Config{Client: c, Logger: quiet, OnStep: func(string) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
}

func configMap(ns, name string, data map[string]any, annotations map[string]string) *object.Unstructured {
	u := &object.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	if data != nil {
		u.SetNested(data, "data")
	}
	return u
}

// The reconciler driven by hand, with a store the test fills in place of
// the informer's cache, against a real server.
func TestMirrorReconcileCases(t *testing.T) {
	c := startServer(t)
	ctx := t.Context()
	cms := client.NewResource[*object.Unstructured](c, demo.ConfigMapsGVR)
	store, err := informer.NewStore[*object.Unstructured](nil)
	if err != nil {
		t.Fatal(err)
	}
	var did []string
	m := demo.NewMirror(cms, store, func(key, action string) { did = append(did, key+": "+action) })
	create := func(o *object.Unstructured) *object.Unstructured {
		t.Helper()
		got, err := cms.Namespace(o.GetNamespace()).Create(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	reconcile := func(key string) error {
		t.Helper()
		res, err := m.Reconcile(ctx, key)
		if res != (controller.Result{}) {
			t.Errorf("result %+v", res)
		}
		return err
	}

	// Stale cache: the source is known, the mirror exists on the server
	// but not in the cache. The create fails AlreadyExists and the
	// reconciler falls back to a live read, then updates.
	src := create(configMap("default", "a", map[string]any{"k": "v2"}, nil))
	store.Add(src)
	create(configMap("default", "a-mirror", map[string]any{"k": "v1"}, map[string]string{demo.MirrorOfAnnotation: "default/a"}))
	if err := reconcile("default/a"); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Namespace("default").Get(ctx, "a-mirror")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Nested("data", "k"); v != "v2" {
		t.Errorf("mirror data k=%v, want v2", v)
	}
	store.Add(got)
	if err := reconcile("default/a"); err != nil {
		t.Fatal(err)
	}

	// A ConfigMap with the mirror's name that the controller does not own
	// is left alone, terminally.
	store.Add(create(configMap("default", "b", map[string]any{"k": "v"}, nil)))
	store.Add(create(configMap("default", "b-mirror", map[string]any{"mine": "yes"}, nil)))
	err = reconcile("default/b")
	if !errors.Is(err, demo.ErrNotOwned) || !controller.IsTerminal(err) {
		t.Fatalf("reconcile of unowned mirror: %v", err)
	}

	// A mirror is not mirrored; a missing source with no mirror is a no-op.
	if err := reconcile("default/a-mirror"); err != nil {
		t.Fatal(err)
	}
	if err := reconcile("default/none"); err != nil {
		t.Fatal(err)
	}

	// A stale cached mirror (older resourceVersion) makes the delete's
	// precondition fail: an error to retry, not a deletion of a newer object.
	store.Delete(src)
	stale := got.DeepCopy()
	fresh := got.DeepCopy()
	fresh.SetNested(map[string]any{"k": "edited"}, "data")
	if _, err := cms.Namespace("default").Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	store.Update(stale)
	if err := reconcile("default/a"); !client.IsConflict(err) {
		t.Fatalf("delete with stale precondition: %v, want Conflict", err)
	}
	cur, _ := cms.Namespace("default").Get(ctx, "a-mirror")
	store.Update(cur)
	if err := reconcile("default/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Namespace("default").Get(ctx, "a-mirror"); !client.IsNotFound(err) {
		t.Fatalf("mirror after source deleted: %v", err)
	}
	if err := reconcile("bad/key/x"); !controller.IsTerminal(err) {
		t.Errorf("bad key: %v", err)
	}

	want := []string{
		"default/a: updated mirror", "default/a: in sync",
		"default/a-mirror: nothing to do", "default/none: nothing to do",
		"default/a: deleted mirror",
	}
	if !slices.Equal(did, want) {
		t.Errorf("actions\n%q\nwant\n%q", did, want)
	}
}

func TestSourceKey(t *testing.T) {
	plain := configMap("ns", "x", nil, nil)
	mirror := configMap("ns", "x-mirror", nil, map[string]string{demo.MirrorOfAnnotation: "ns/x"})
	if got := demo.SourceKey(plain); got != "ns/x" {
		t.Errorf("SourceKey(plain) = %q", got)
	}
	if got := demo.SourceKey(mirror); got != "ns/x" || !demo.IsMirror(mirror) || demo.IsMirror(plain) {
		t.Errorf("SourceKey(mirror) = %q", got)
	}
}
