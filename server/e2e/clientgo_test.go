package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
)

func restConfig(t testing.TB, s *testServer) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return cfg
}

func TestClientGoTyped(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	cms := cs.CoreV1().ConfigMaps("default")

	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.CreationTimestamp.IsZero() || created.ResourceVersion == "" {
		t.Fatalf("server did not set metadata: %+v", created.ObjectMeta)
	}
	// A create of the name without a resourceVersion (with one, kube's
	// storage answers its 500 first: TestKubeWritesSameAsOurs).
	dup := created.DeepCopy()
	dup.ResourceVersion = ""
	if _, err := cms.Create(ctx, dup, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("duplicate create: %v", err)
	}
	upd := created.DeepCopy()
	upd.Data["k"] = "2"
	updated, err := cms.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == created.ResourceVersion {
		t.Fatal("update kept the resourceVersion")
	}
	stale := created.DeepCopy()
	stale.Data["k"] = "3"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}

	t.Run("list pages and watch from the list RV", func(t *testing.T) {
		for i := range 7 {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var names []string
		var firstRV string
		opts := metav1.ListOptions{Limit: 3}
		pages := 0
		for {
			l, err := cms.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if firstRV == "" {
				firstRV = l.ResourceVersion
			} else if l.ResourceVersion != firstRV {
				t.Fatalf("page %d RV %s, first page %s", pages, l.ResourceVersion, firstRV)
			}
			for _, cm := range l.Items {
				names = append(names, cm.Name)
			}
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
		if pages != 3 || len(names) != 7 || names[0] != "p00" || names[6] != "p06" {
			t.Fatalf("%d pages, names %v", pages, names)
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: firstRV})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if ev.Type != watch.Added || !ok || cm.Name != "late" {
				t.Fatalf("event %v %#v", ev.Type, ev.Object)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event")
		}
	})

	t.Run("pager 500 over 2000", func(t *testing.T) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "many"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		many := cs.CoreV1().ConfigMaps("many")
		var wg sync.WaitGroup
		errs := make(chan error, 2000)
		sem := make(chan struct{}, 32)
		for i := range 2000 {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				_, err := many.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}}, metav1.CreateOptions{})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var calls int
		p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			calls++
			if opts.Limit != 500 {
				t.Errorf("pager asked limit %d", opts.Limit)
			}
			return many.List(ctx, opts)
		})
		p.PageSize = 500
		seen := map[string]bool{}
		err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			seen[obj.(*corev1.ConfigMap).Name] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != 2000 || calls != 4 {
			t.Fatalf("pager saw %d objects in %d calls", len(seen), calls)
		}
	})
}

func TestClientGoDynamicInformer(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	dyn := dynamic.NewForConfigOrDie(restConfig(t, s))
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cms := dyn.Resource(gvr).Namespace("default")
	if _, err := cms.Create(ctx, cmObject("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Of its namespace only: the server writes kube-system's ConfigMaps
	// of its own (extension-apiserver-authentication, …) as it starts.
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, "default", nil)
	inf := factory.ForResource(gvr).Informer()
	events := make(chan string, 100)
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- "add " + obj.(*unstructured.Unstructured).GetName() },
		UpdateFunc: func(_, obj any) {
			events <- "update " + obj.(*unstructured.Unstructured).GetName()
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			events <- "delete " + obj.(*unstructured.Unstructured).GetName()
		},
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); factory.Start(ctx.Done()); factory.WaitForCacheSync(ctx.Done()) }()
	defer func() { cancel(); factory.Shutdown(); wg.Wait() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %q, want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no event, want %q", want)
		}
	}
	expect("add before")
	obj, err := cms.Create(ctx, cmObject("live"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("add live")
	obj.Object["data"] = map[string]any{"k": "v"}
	if _, err := cms.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update live")
	if err := cms.Delete(ctx, "live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete live")
}

func cmObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name},
	}}
}
