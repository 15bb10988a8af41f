package workqueue_test

import (
	"fmt"

	"github.com/listwatch/listwatch/workqueue"
)

func ExampleQueue() {
	q := workqueue.New(workqueue.Config[string]{Name: "pods"})
	q.AddLowPriority("default/resync-me") // a periodic resync
	q.Add("default/b")
	q.Add("default/a")
	q.Add("default/b") // already queued: keeps its place

	for q.Len() > 0 {
		key, _ := q.Get()
		fmt.Println(key)
		q.Done(key)
	}
	q.ShutDown()
	// Output:
	// default/b
	// default/a
	// default/resync-me
}
