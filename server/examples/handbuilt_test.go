package examples_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
	"github.com/listwatch/listwatch/workqueue"
)

// PodController is the first article's hand-built controller: the informer's
// cache (the "indexer"), a rate-limited work queue of keys, and the
// informer itself, drained by worker goroutines.
type PodController struct {
	indexer  informer.Lister[*corev1.Pod]
	queue    *workqueue.Queue[string]
	informer *informer.Informer[*corev1.Pod]
	// synced is the HasSynced of the handler registration that feeds
	// queue: true once every pod of the first list is in the queue.
	synced func() bool
	// handled is for the example only: it tells main a key was processed.
	handled chan<- string
}

func NewPodController(queue *workqueue.Queue[string], inf *informer.Informer[*corev1.Pod], synced func() bool, handled chan<- string) *PodController {
	return &PodController{indexer: inf.Lister(), queue: queue, informer: inf, synced: synced, handled: handled}
}

// Run is the article's Run(threadiness, stopCh): start the informer, wait
// for its cache to sync, start threadiness workers, and block until ctx
// ends. Unlike the original it returns only after every goroutine it
// started has exited.
func (c *PodController) Run(ctx context.Context, threadiness int) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.queue.ShutDown()               // runs first: workers' Get returns shutdown
	wg.Go(func() { _ = c.queue.Run(ctx) }) // delivers AddRateLimited retries
	wg.Go(func() { _ = c.informer.Run(ctx) })
	if !informer.WaitForCacheSync(ctx, c.synced) {
		return errors.New("timed out waiting for caches to sync")
	}
	for range threadiness {
		wg.Go(c.runWorker)
	}
	<-ctx.Done()
	return nil
}

func (c *PodController) runWorker() {
	for c.processNextItem() {
	}
}

// processNextItem takes one key off the queue, syncs it, and marks it done.
func (c *PodController) processNextItem() bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if pod, ok := c.indexer.GetByKey(key); ok && pod.DeletionTimestamp != nil {
		// Being deleted (the server marks a pod before removing it, as
		// kube-apiserver does): wait for it to be gone.
		c.queue.Forget(key)
		return true
	}
	err := c.syncToStdout(key)
	c.handleError(err, key)
	c.handled <- key
	return true
}

// syncToStdout prints the cached state of key. (The article's version
// dereferences the missing object when it does not exist; the key is all
// there is to print.)
func (c *PodController) syncToStdout(key string) error {
	pod, exists := c.indexer.GetByKey(key)
	if !exists {
		fmt.Printf("Pod %s does not exist\n", key)
		return nil
	}
	fmt.Printf("Sync/Add/Update for Pod %s\n", pod.GetName())
	return nil
}

// handleError retries a failed key up to 5 times with rate limiting, then
// gives up; a success resets the key's backoff.
func (c *PodController) handleError(err error, key string) {
	if err == nil {
		c.queue.Forget(key)
		return
	}
	if c.queue.NumRequeues(key) < 5 {
		c.queue.AddRateLimited(key)
		return
	}
	c.queue.Forget(key)
	slog.Error("dropping pod out of the queue", "key", key, "err", err)
}

// The first article's "old style": a hand-built ListWatch over every
// namespace, an informer whose handlers put keys on a rate-limited work
// queue, and a controller draining it with processNextItem.
func Example_handBuiltController() {
	c := newClient() // clientcmd.BuildConfigFromFlags + kubernetes.NewForConfig
	defer c.CloseIdleConnections()
	pods := client.NewResource[*corev1.Pod](c, podsGVR)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := pods.Namespace("default").Create(ctx, newPod("web-1", "nginx")); err != nil {
		panic(err)
	}

	// cache.NewListWatchFromClient(restClient, "pods", NamespaceAll, fields.Everything())
	podListWatcher := informer.NewListWatchFromClient[*corev1.Pod](pods, "", "")
	// workqueue.NewRateLimitingQueue(workqueue.DefaultControllerRateLimiter())
	queue := workqueue.New(workqueue.Config[string]{RateLimiter: workqueue.DefaultControllerRateLimiter[string]()})
	// cache.NewIndexerInformer(podListWatcher, &v1.Pod{}, 0, handlers, cache.Indexers{})
	inf, err := informer.New(podListWatcher, informer.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	enqueue := func(p *corev1.Pod) { queue.Add(object.Key(p)) }
	reg, err := inf.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, _ bool) { enqueue(p) },
		UpdateFunc: func(_, p *corev1.Pod) { enqueue(p) },
		// Typed deletes: no DeletionHandlingMetaNamespaceKeyFunc and no
		// tombstone to unwrap.
		DeleteFunc: func(p *corev1.Pod, _ bool) { enqueue(p) },
	}, informer.HandlerOptions{})
	if err != nil {
		panic(err)
	}

	handled := make(chan string, 16) // buffered: an unexpected key shows in the output instead of blocking a worker
	controller := NewPodController(queue, inf, reg.HasSynced, handled)
	done := make(chan error, 1)
	go func() { done <- controller.Run(ctx, 1) }()

	<-handled // web-1, from the initial list
	if _, err := pods.Namespace("default").Delete(ctx, "web-1", wire.DeleteOptions{}); err != nil {
		panic(err)
	}
	<-handled // web-1 again, now gone
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// Sync/Add/Update for Pod web-1
	// Pod default/web-1 does not exist
	// Run: <nil>
}
