package informer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// The first style: build the ListWatch and the informer by hand and
// register handlers. srv stands in for a *client.Resource[T].
func Example_handBuilt() {
	srv := newFakeServer()
	srv.upsert("default", "web-1", map[string]string{"app": "web"})
	srv.upsert("default", "web-2", map[string]string{"app": "web"})

	lw := informer.NewListWatchFromClient[*object.Unstructured](srv, "", "")
	inf, err := informer.New(lw, informer.Options[*object.Unstructured]{})
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	var lines []string
	say := func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }
	deleted := make(chan struct{})
	reg, _ := inf.AddEventHandler(informer.HandlerFuncs[*object.Unstructured]{
		AddFunc: func(o *object.Unstructured, initial bool) {
			say(fmt.Sprintf("add %s initial=%v", object.Key(o), initial))
		},
		DeleteFunc: func(o *object.Unstructured, unknown bool) {
			say(fmt.Sprintf("delete %s finalStateUnknown=%v", object.Key(o), unknown))
			close(deleted)
		},
	}, informer.HandlerOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { inf.Run(ctx); close(done) }()
	informer.WaitForCacheSync(ctx, reg.HasSynced)

	srv.remove("default", "web-1")
	<-deleted
	cancel()
	<-done
	mu.Lock()
	for _, l := range lines {
		fmt.Println(l)
	}
	mu.Unlock()
	// Output:
	// add default/web-1 initial=true
	// add default/web-2 initial=true
	// delete default/web-1 finalStateUnknown=false
}

// The second style: a factory shares one informer per resource and
// selector set between everyone who asks for it.
func Example_factory() {
	srv := newFakeServer()
	srv.upsert("default", "a", map[string]string{"app": "web"})
	srv.upsert("kube-system", "b", map[string]string{"app": "dns"})

	f := informer.NewFactory(informer.ReflectorOptions{})
	key := informer.Key{Resource: "configmaps"}
	newLW := func() informer.ListerWatcher[*object.Unstructured] { return srv }
	cms, _ := informer.For(f, key, newLW, informer.Options[*object.Unstructured]{})
	again, _ := informer.For(f, key, newLW, informer.Options[*object.Unstructured]{})
	fmt.Println("shared:", cms == again)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	fmt.Println("synced:", f.WaitForCacheSync(ctx))

	keys := cms.Lister().ListKeys()
	slices.Sort(keys)
	fmt.Println("keys:", keys)
	web, _ := cms.Lister().ByIndex(informer.IndexLabel, informer.LabelIndexValue("app", "web"))
	fmt.Println("app=web:", object.Key(web[0]))
	cancel()
	<-done
	// Output:
	// shared: true
	// synced: true
	// keys: [default/a kube-system/b]
	// app=web: default/a
}
