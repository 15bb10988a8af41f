package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// ourClient is listwatch's own client from the server's kubeconfig.
func ourClient(t testing.TB, s *testServer) *client.Client {
	t.Helper()
	cfg, err := client.LoadKubeconfig(s.KubeconfigPath(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 500
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// recorder is a handler that checks the sequence it sees: no update
// before add, nothing after a delete but an add.
type recorder[T object.Object] struct {
	t      testing.TB
	mu     sync.Mutex
	live   map[string]string // key → RV
	events chan string
}

func newRecorder[T object.Object](t testing.TB) *recorder[T] {
	return &recorder[T]{t: t, live: map[string]string{}, events: make(chan string, 1000)}
}

func (r *recorder[T]) OnAdd(o T, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.live[object.Key(o)]; ok {
		r.t.Errorf("add of live %s", object.Key(o))
	}
	r.live[object.Key(o)] = o.GetResourceVersion()
	r.events <- "add " + object.Key(o)
}

func (r *recorder[T]) OnUpdate(old, o T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.live[object.Key(o)]; !ok {
		r.t.Errorf("update before add of %s", object.Key(o))
	}
	r.live[object.Key(o)] = o.GetResourceVersion()
	r.events <- "update " + object.Key(o)
}

func (r *recorder[T]) OnDelete(o T, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.live[object.Key(o)]; !ok {
		r.t.Errorf("delete of unknown %s", object.Key(o))
	}
	delete(r.live, object.Key(o))
	r.events <- "delete " + object.Key(o)
}

func (r *recorder[T]) expect(want ...string) {
	r.t.Helper()
	for _, w := range want {
		select {
		case got := <-r.events:
			if got != w {
				r.t.Fatalf("event %q, want %q", got, w)
			}
		case <-time.After(30 * time.Second):
			r.t.Fatalf("no event, want %q", w)
		}
	}
}

// runInformer runs inf until the test ends and waits for its sync.
func runInformer[T object.Object](t testing.TB, inf *informer.Informer[T]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if !informer.WaitForCacheSync(sctx, inf.HasSynced) {
		t.Fatalf("informer did not sync: %v", inf.LastSyncError())
	}
}

func TestInformerTypedPods(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := ourClient(t, s)
	ctx := t.Context()
	pods := client.NewResource[*corev1.Pod](c, client.GroupVersionResource{Version: "v1", Resource: "pods"})
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}
	}
	if _, err := pods.Namespace("default").Create(ctx, pod("first")); err != nil {
		t.Fatal(err)
	}
	inf, err := informer.New(informer.NewListWatchFromClient[*corev1.Pod](pods, "app=web", ""), informer.Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder[*corev1.Pod](t)
	if _, err := inf.AddEventHandler(rec, informer.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	rec.expect("add default/first")

	created, err := pods.Namespace("default").Create(ctx, pod("second"))
	if err != nil {
		t.Fatal(err)
	}
	rec.expect("add default/second")
	created.Spec.Containers[0].Image = "nginx:2"
	if _, err := pods.Namespace("default").Update(ctx, created); err != nil {
		t.Fatal(err)
	}
	rec.expect("update default/second")
	got, ok := inf.Lister().GetByKey("default/second")
	if !ok || got.Spec.Containers[0].Image != "nginx:2" {
		t.Fatalf("store has %+v", got)
	}
	// Dropping the label makes the pod leave the selected set: a delete.
	if _, err := pods.Namespace("default").Patch(ctx, "second", client.MergePatch, []byte(`{"metadata":{"labels":{"app":"db"}}}`)); err != nil {
		t.Fatal(err)
	}
	rec.expect("delete default/second")
	if _, err := pods.Namespace("default").Delete(ctx, "first", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// As kube-apiserver, a pod is marked (deletionTimestamp) before it
	// is removed, even with no grace period.
	rec.expect("update default/first", "delete default/first")
	if n := len(inf.Lister().List()); n != 0 {
		t.Fatalf("store has %d pods", n)
	}
}

func TestInformerUnstructuredConfigMapsAndCRD(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := ourClient(t, s)
	ctx := t.Context()

	cms := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	for i := range 3 {
		if _, err := cms.Namespace("default").Create(ctx, unstructuredCM(fmt.Sprintf("cm-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	inf, err := informer.New[*object.Unstructured](cms.Namespace("default"), informer.Options[*object.Unstructured]{Transform: informer.DropManagedFields})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder[*object.Unstructured](t)
	inf.AddEventHandler(rec, informer.HandlerOptions{})
	runInformer(t, inf)
	rec.expect("add default/cm-0", "add default/cm-1", "add default/cm-2")
	if _, err := cms.Namespace("default").Delete(ctx, "cm-1", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.expect("delete default/cm-1")

	crds := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &object.Unstructured{}
	if err := crd.UnmarshalJSON([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"gadgets.example.com"},
		"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"gadgets","singular":"gadget","kind":"Gadget"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	gadgets := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := gadgets.List(ctx, wire.ListOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gadgets never served: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
	ginf, err := informer.New[*object.Unstructured](gadgets, informer.Options[*object.Unstructured]{})
	if err != nil {
		t.Fatal(err)
	}
	grec := newRecorder[*object.Unstructured](t)
	ginf.AddEventHandler(grec, informer.HandlerOptions{})
	runInformer(t, ginf)
	g := &object.Unstructured{}
	g.UnmarshalJSON([]byte(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1"},"spec":{"size":3}}`))
	if _, err := gadgets.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	grec.expect("add g1")
}

func unstructuredCM(name string) *object.Unstructured {
	u := &object.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName(name)
	u.SetNested(map[string]any{"k": name}, "data")
	return u
}
