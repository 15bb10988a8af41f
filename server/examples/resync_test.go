package examples_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// The second article's demo: handlers that print Add, Update and Delete,
// with a resync period. Nothing changes on the server, yet every period
// the handler gets an Update for each cached object, with old and new
// being the same version. (The article prints a timestamp first, as
// `listwatch watch` does; it is left out here to keep the output stable.)
func Example_resync() {
	c := newClient()
	defer c.CloseIdleConnections()
	pods := client.NewResource[*corev1.Pod](c, podsGVR).Namespace("default")
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := pods.Create(ctx, newPod("example", "nginx")); err != nil {
		panic(err)
	}
	defer func() { _, _ = pods.Delete(context.Background(), "example", wire.DeleteOptions{}) }()

	inf, err := informer.New[*corev1.Pod](pods, informer.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	var once sync.Once
	resynced := make(chan struct{})
	_, err = inf.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) { fmt.Println("Add:", object.Key(p)) },
		UpdateFunc: func(old, p *corev1.Pod) {
			once.Do(func() {
				fmt.Println("Update:", object.Key(p), "same version:", old.ResourceVersion == p.ResourceVersion)
				close(resynced)
			})
		},
	}, informer.HandlerOptions{ResyncPeriod: time.Second})
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	<-resynced
	cancel()
	<-done
	// Output:
	// Add: default/example
	// Update: default/example same version: true
}
