package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

const cleanupFinalizer = "example.com/cleanup"

// finalizerReconciler is the usual controller-runtime finalizer pattern,
// built on listwatch's informer, work queue and controller: add the
// finalizer to every live object; when one is being deleted, run its
// cleanup, then remove the finalizer so that the server deletes it.
//
// The cache can lag behind the reconciler's own writes, so it remembers
// the objects (by uid) whose cleanup already ran, as controllers'
// expectations do: a retry after a failed finalizer removal, or a
// reconcile from a stale cache, does not clean up twice.
type finalizerReconciler struct {
	cms    *client.Resource[*corev1.ConfigMap]
	lister informer.Lister[*corev1.ConfigMap]

	mu       sync.Mutex
	cleaned  map[types.UID]bool // the reconciler's memory: cleanup done
	cleanups map[types.UID]int  // the test's count of cleanup calls
}

// cleanup is the work the finalizer guards (freeing an external
// resource, say); here it only counts.
func (r *finalizerReconciler) cleanup(cm *corev1.ConfigMap) {
	r.cleanups[cm.UID]++
}

func (r *finalizerReconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	cm, ok := r.lister.GetByKey(key)
	if !ok {
		return controller.Result{}, nil
	}
	if cm.DeletionTimestamp == nil {
		if slices.Contains(cm.Finalizers, cleanupFinalizer) {
			return controller.Result{}, nil
		}
		u := cm.DeepCopy()
		u.Finalizers = append(u.Finalizers, cleanupFinalizer)
		_, err := r.cms.Namespace(cm.Namespace).Update(ctx, u) // a conflict is retried
		return controller.Result{}, err
	}
	if !slices.Contains(cm.Finalizers, cleanupFinalizer) {
		return controller.Result{}, nil
	}
	r.mu.Lock()
	if !r.cleaned[cm.UID] {
		r.cleanup(cm)
		r.cleaned[cm.UID] = true
	}
	r.mu.Unlock()
	u := cm.DeepCopy()
	u.Finalizers = slices.DeleteFunc(u.Finalizers, func(f string) bool { return f == cleanupFinalizer })
	_, err := r.cms.Namespace(cm.Namespace).Update(ctx, u)
	if client.IsNotFound(err) {
		return controller.Result{}, nil // removed already, by an earlier try
	}
	return controller.Result{}, err
}

// TestFinalizerReconciler runs a finalizer reconciler on listwatch's own
// informer, work queue and controller against the server: each object
// gets the finalizer, a DELETE leaves it marked (MODIFIED with
// deletionTimestamp) until the reconciler has cleaned up, exactly once,
// and removed the finalizer; then it is gone (DELETED).
func TestFinalizerReconciler(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := ourClient(t, s)
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()

	cms := client.NewResource[*corev1.ConfigMap](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	inf, err := informer.New[*corev1.ConfigMap](cms.Namespace("default"), informer.Options[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	r := &finalizerReconciler{cms: cms, lister: inf.Lister(), cleaned: map[types.UID]bool{}, cleanups: map[types.UID]int{}}
	var ctl *controller.Controller
	enqueue := func(o *corev1.ConfigMap) { ctl.Enqueue(object.Key(o)) }
	reg, err := inf.AddEventHandler(informer.HandlerFuncs[*corev1.ConfigMap]{
		AddFunc:    func(o *corev1.ConfigMap, _ bool) { enqueue(o) },
		UpdateFunc: func(_, o *corev1.ConfigMap) { enqueue(o) },
		DeleteFunc: func(o *corev1.ConfigMap, _ bool) { enqueue(o) },
	}, informer.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err = controller.New(r, controller.Options{Name: "finalizer", Workers: 2, HasSynced: []func() bool{reg.HasSynced}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(runCtx) })
	wg.Go(func() { _ = ctl.Run(runCtx) })
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			stop()
			wg.Wait()
		}
	}
	defer stopAll()

	const n = 5
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{LabelSelector: "test=finalizer"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range n {
		cm := &corev1.ConfigMap{}
		cm.Name = fmt.Sprintf("guarded-%d", i)
		cm.Labels = map[string]string{"test": "finalizer"}
		if _, err := cms.Namespace("default").Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	// Every object gets the finalizer from the reconciler.
	uids := map[string]types.UID{}
	for len(uids) < n {
		ev := nextWatchEvent(t, w)
		cm := ev.Object.(*corev1.ConfigMap)
		if ev.Type == watch.Modified && slices.Contains(cm.Finalizers, cleanupFinalizer) {
			uids[cm.Name] = cm.UID
		}
	}
	for name := range uids {
		res, err := cms.Namespace("default").Delete(ctx, name, wire.DeleteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.HasObject() || res.Object.DeletionTimestamp == nil {
			t.Fatalf("DELETE of %s answered %+v", name, res)
		}
	}
	// Each is marked, then gone once the reconciler let it go.
	marked, deleted := map[string]bool{}, map[string]bool{}
	for len(deleted) < n {
		ev := nextWatchEvent(t, w)
		cm := ev.Object.(*corev1.ConfigMap)
		switch {
		case ev.Type == watch.Modified && cm.DeletionTimestamp != nil:
			marked[cm.Name] = true
		case ev.Type == watch.Deleted:
			if !marked[cm.Name] {
				t.Fatalf("%s deleted without being marked first", cm.Name)
			}
			deleted[cm.Name] = true
		}
	}
	stopAll()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, uid := range uids {
		if got := r.cleanups[uid]; got != 1 {
			t.Errorf("%s cleaned up %d times, want 1", name, got)
		}
	}
}
