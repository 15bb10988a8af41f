package workqueue

import (
	"strconv"
	"testing"
)

// The side-by-side benchmarks against client-go's queue, including the
// controller-level one that decides, live outside the library (it may not
// import k8s.io): see server/compat/workqueue. These measure the queue
// alone, for profiling.

var benchKeys = func() []string {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "namespace-" + strconv.Itoa(i%37) + "/pod-" + strconv.Itoa(i)
	}
	return keys
}()

// BenchmarkAddDuplicate: Add of an item that is already queued.
func BenchmarkAddDuplicate(b *testing.B) {
	q := New(Config[string]{})
	for _, k := range benchKeys {
		q.Add(k)
	}
	b.ResetTimer()
	for i := range b.N {
		q.Add(benchKeys[i%len(benchKeys)])
	}
	b.StopTimer()
	q.ShutDown()
}

// BenchmarkAddGetDoneSerial: one full cycle on one goroutine.
func BenchmarkAddGetDoneSerial(b *testing.B) {
	q := New(Config[string]{})
	b.ResetTimer()
	for i := range b.N {
		k := benchKeys[i%len(benchKeys)]
		q.Add(k)
		q.Get()
		q.Done(k)
	}
	b.StopTimer()
	q.ShutDown()
}
