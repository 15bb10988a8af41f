package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
)

func (e *env) restConfig() *rest.Config {
	return &rest.Config{Host: e.url, QPS: 1000, Burst: 1000}
}

// TestClientGoTyped drives the server with client-go's typed clientset,
// which sends protobuf bodies and accepts JSON answers.
func TestClientGoTyped(t *testing.T) {
	e := newEnv(t)
	cs, err := kubernetes.NewForConfig(e.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	cms := cs.CoreV1().ConfigMaps("default")
	c, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "typed", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.UID == "" || c.ResourceVersion == "" || c.CreationTimestamp.IsZero() {
		t.Fatalf("created: %+v", c.ObjectMeta)
	}
	// As kube's storage: a create that names a resourceVersion is a 500
	// before the name is looked up.
	_, err = cms.Create(ctx, c, metav1.CreateOptions{})
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != 500 || st.Status().Message != "resourceVersion should not be set on objects to be created" {
		t.Fatalf("create with a resourceVersion: %v", err)
	}
	dup := c.DeepCopy()
	dup.ResourceVersion = ""
	if _, err := cms.Create(ctx, dup, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("duplicate create: %v", err)
	}
	c.Data["k"] = "v2"
	u, err := cms.Update(ctx, c, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, c, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
	if _, err := cms.Patch(ctx, "typed", types.StrategicMergePatchType, []byte(`{"data":{"s":"1"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "a=b"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Data["s"] != "1" {
		t.Fatalf("list: %v %+v", err, l)
	}
	if _, err := cms.Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing: %v", err)
	}
	if err := cms.Delete(ctx, "typed", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &u.UID}}); err != nil {
		t.Fatal(err)
	}
	// Pods with field selectors, the kubelet's query.
	pods := cs.CoreV1().Pods("default")
	for i, node := range []string{"n1", "n2"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i)}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pl, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n2"})
	if err != nil || len(pl.Items) != 1 || pl.Items[0].Name != "p1" {
		t.Fatalf("pods by node: %v %+v", err, pl)
	}
	// Discovery through client-go (which asks for aggregated discovery first).
	dc, err := discovery.NewDiscoveryClientForConfig(e.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	rl, err := dc.ServerResourcesForGroupVersion("v1")
	if err != nil || len(rl.APIResources) < 7 {
		t.Fatalf("discovery: %v %v", err, rl)
	}
	if _, _, err := dc.ServerGroupsAndResources(); err != nil {
		t.Fatalf("groups and resources: %v", err)
	}
}

// TestClientGoPagerAndInformer lists through client-go's pager and syncs a
// dynamic informer, which opens with a streaming list
// (sendInitialEvents), then follows changes.
func TestClientGoPagerAndInformer(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 25; i++ {
		e.must(201, "POST", cmPath, cm(fmt.Sprintf("p%02d", i), nil, nil))
	}
	dyn, err := dynamic.NewForConfig(e.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	pg := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return dyn.Resource(gvr).Namespace("default").List(ctx, o)
	})
	pg.PageSize = 7
	n := 0
	if err := pg.EachListItem(t.Context(), metav1.ListOptions{}, func(runtime.Object) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 25 {
		t.Fatalf("pager saw %d items", n)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, "default", 0, cache.Indexers{}, nil)
	inf := f.Informer()
	added := make(chan string, 100)
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		added <- obj.(*unstructured.Unstructured).GetName()
	}})
	ran := make(chan struct{})
	go func() { defer close(ran); inf.Run(ctx.Done()) }()
	defer func() { cancel(); <-ran }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 20*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if got := len(inf.GetStore().List()); got != 25 {
		t.Fatalf("informer has %d objects", got)
	}
	e.must(201, "POST", cmPath, cm("late", nil, nil))
	deadline := time.After(20 * time.Second)
	for {
		select {
		case name := <-added:
			if name == "late" {
				cancel()
				return
			}
		case <-deadline:
			t.Fatal("informer did not see the new object")
		}
	}
}
