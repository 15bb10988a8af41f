package workqueue_test

import (
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	clientgo "k8s.io/client-go/util/workqueue"

	"github.com/listwatch/listwatch/workqueue"
)

// benchQueue is the part of both queues the micro-benchmarks drive.
type benchQueue interface {
	Add(string)
	Get() (string, bool)
	Done(string)
	Len() int
	ShutDownWithDrain()
}

type clientGoQueue struct {
	clientgo.TypedRateLimitingInterface[string]
}

// ShutDownWithDrain of client-go's rate-limiting queue leaves its delaying
// goroutine running; ShutDown stops it.
func (q clientGoQueue) ShutDownWithDrain() {
	q.TypedRateLimitingInterface.ShutDownWithDrain()
	q.ShutDown()
}

func newClientGo() benchQueue {
	return clientGoQueue{clientgo.NewTypedRateLimitingQueue(clientgo.DefaultTypedControllerRateLimiter[string]())}
}

func newOurs() benchQueue { return workqueue.New(workqueue.Config[string]{}) }

var benchKeys = func() []string {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "namespace-" + strconv.Itoa(i%37) + "/pod-" + strconv.Itoa(i)
	}
	return keys
}()

// forEachImpl runs bench as a sub-benchmark on a fresh queue of each
// implementation, ours first, so every comparison is in one run.
func forEachImpl(b *testing.B, bench func(b *testing.B, q benchQueue)) {
	for _, impl := range []struct {
		name string
		make func() benchQueue
	}{{"listwatch", newOurs}, {"client-go", newClientGo}} {
		b.Run(impl.name, func(b *testing.B) { bench(b, impl.make()) })
	}
}

// BenchmarkThroughput: 8 producers Add b.N keys drawn from 10k, 8 workers
// Get and Done them until the queue is empty. ns/op is per Add.
//
// Beware: ns/op measures a mix that the scheduler chooses. gets/add is the
// share of Adds that queued a key rather than finding it already queued.
// When the workers are starved (a loaded machine, or b.N far above the key
// space) gets/add is near 0 and ns/op is the cost of a duplicate Add;
// when they keep up it is near 1 and ns/op is a whole Add, Get, Done cycle
// with a wake-up, several times dearer. Compare only runs with similar
// gets/add, and prefer BenchmarkController.
func BenchmarkThroughput(b *testing.B) { forEachImpl(b, benchThroughput) }

// BenchmarkThroughputDistinct is BenchmarkThroughput with b.N distinct
// keys: every Add queues its key (gets/add is 1 whatever the scheduler
// does), so ns/op is the whole Add, Get, Done cycle under contention.
func BenchmarkThroughputDistinct(b *testing.B) {
	forEachImpl(b, func(b *testing.B, q benchQueue) {
		keys := make([]string, b.N)
		for i := range keys {
			keys[i] = "namespace-" + strconv.Itoa(i%37) + "/pod-" + strconv.Itoa(i)
		}
		benchThroughputOver(b, q, keys)
	})
}

func benchThroughput(b *testing.B, q benchQueue) { benchThroughputOver(b, q, benchKeys) }

// benchThroughputOver: 8 producers Add b.N keys, cycling over keys; 8
// workers Get and Done them until the queue is empty.
func benchThroughputOver(b *testing.B, q benchQueue, keys []string) {
	const producers, workers = 8, 8
	var wg sync.WaitGroup
	var handled sync.Map // per worker counts are summed at the end
	for w := range workers {
		wg.Go(func() {
			n := 0
			for {
				k, shutdown := q.Get()
				if shutdown {
					handled.Store(w, n)
					return
				}
				n++
				q.Done(k)
			}
		})
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	var prod sync.WaitGroup
	for p := range producers {
		prod.Go(func() {
			for i := p; i < b.N; i += producers {
				q.Add(keys[i%len(keys)])
			}
		})
	}
	prod.Wait()
	for q.Len() > 0 {
		time.Sleep(50 * time.Microsecond) // polling the real condition
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	q.ShutDownWithDrain()
	wg.Wait()
	total := 0
	handled.Range(func(_, v any) bool { total += v.(int); return true })
	b.ReportMetric(float64(total)/float64(b.N), "gets/add")
}

// BenchmarkAddWith1MQueued measures Add of a new item into a queue that
// already holds a million, reporting the mean and the tail (p99, max): a
// queue that grows by copying stalls one Add, under its lock, now and then.
func BenchmarkAddWith1MQueued(b *testing.B) {
	forEachImpl(b, func(b *testing.B, q benchQueue) {
		for i := range 1_000_000 {
			q.Add("pre-" + strconv.Itoa(i))
		}
		keys := make([]string, b.N)
		for i := range keys {
			keys[i] = "new-" + strconv.Itoa(i)
		}
		lat := make([]time.Duration, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			q.Add(keys[i])
			lat[i] = time.Since(start)
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
		b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
		q.ShutDownWithDrain()
	})
}

// cpuTime is the process's user+system CPU time. The machine running the
// benchmarks is shared, so CPU spent per op is a steadier comparison than
// wall time per op; both are reported.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAddDuplicate: Add of an item that is already queued (one
// goroutine): the gets/add = 0 end of BenchmarkThroughput.
func BenchmarkAddDuplicate(b *testing.B) {
	forEachImpl(b, func(b *testing.B, q benchQueue) {
		for _, k := range benchKeys {
			q.Add(k)
		}
		b.ResetTimer()
		for i := range b.N {
			q.Add(benchKeys[i%len(benchKeys)])
		}
		b.StopTimer()
		q.ShutDownWithDrain()
	})
}

// BenchmarkAddGetDoneSerial: one full cycle on one goroutine: the
// gets/add = 1 end of BenchmarkThroughput, without the wake-ups.
func BenchmarkAddGetDoneSerial(b *testing.B) {
	forEachImpl(b, func(b *testing.B, q benchQueue) {
		b.ResetTimer()
		for i := range b.N {
			k := benchKeys[i%len(benchKeys)]
			q.Add(k)
			q.Get()
			q.Done(k)
		}
		b.StopTimer()
		q.ShutDownWithDrain()
	})
}
