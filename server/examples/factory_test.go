package examples_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// The first article's "new style": a shared informer factory scoped to one
// namespace hands out the pod informer, and a controller.Controller does
// the queue, the workers, the retries and the shutdown.
func Example_factoryController() {
	c := newClient()
	defer c.CloseIdleConnections()
	pods := client.NewResource[*corev1.Pod](c, podsGVR)

	// informers.NewSharedInformerFactoryWithOptions(clientSet, 0, informers.WithNamespace("default"))
	factory := informer.NewFactory(informer.ReflectorOptions{})
	// factory.Core().V1().Pods().Informer()
	podInformer, err := informer.For(factory, informer.Key{Resource: "pods", Namespace: "default"},
		func() informer.ListerWatcher[*corev1.Pod] { return pods.Namespace("default") },
		informer.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}

	handled := make(chan string, 16) // buffered: an unexpected key shows in the output instead of blocking a worker
	reconcile := func(ctx context.Context, key string) (controller.Result, error) {
		pod, exists := podInformer.Lister().GetByKey(key)
		switch {
		case exists && pod.DeletionTimestamp != nil:
			// Being deleted (the server marks a pod before removing
			// it, as kube-apiserver does): wait for it to be gone.
			return controller.Result{}, nil
		case !exists:
			fmt.Printf("Pod %s does not exist\n", key)
		default:
			fmt.Printf("Sync/Add/Update for Pod %s (image %s)\n", pod.Name, pod.Spec.Containers[0].Image)
		}
		handled <- key
		return controller.Result{}, nil
	}
	// informer.AddEventHandler(xxx): the handlers only enqueue keys. They
	// run once the factory runs, by which time ctrl is set.
	var ctrl *controller.Controller
	enqueue := func(p *corev1.Pod) { ctrl.Enqueue(object.Key(p)) }
	reg, err := podInformer.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, _ bool) { enqueue(p) },
		UpdateFunc: func(_, p *corev1.Pod) { enqueue(p) },
		DeleteFunc: func(p *corev1.Pod, _ bool) { enqueue(p) },
	}, informer.HandlerOptions{})
	if err != nil {
		panic(err)
	}
	ctrl, err = controller.New(controller.ReconcilerFunc(reconcile), controller.Options{
		Name:    "pods",
		Workers: 2,
		// The registration's HasSynced: the informer has listed and the
		// handler has enqueued every pod of the list.
		HasSynced: []func() bool{reg.HasSynced},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = factory.Run(ctx) })
	wg.Go(func() { _ = ctrl.Run(ctx) })
	factory.WaitForCacheSync(ctx)

	created, err := pods.Namespace("default").Create(ctx, newPod("api", "nginx:1"))
	if err != nil {
		panic(err)
	}
	<-handled
	created.Spec.Containers[0].Image = "nginx:2"
	if _, err := pods.Namespace("default").Update(ctx, created); err != nil {
		panic(err)
	}
	<-handled
	if _, err := pods.Namespace("default").Delete(ctx, "api", wire.DeleteOptions{}); err != nil {
		panic(err)
	}
	<-handled
	cancel()
	wg.Wait()
	// Output:
	// Sync/Add/Update for Pod api (image nginx:1)
	// Sync/Add/Update for Pod api (image nginx:2)
	// Pod default/api does not exist
}
