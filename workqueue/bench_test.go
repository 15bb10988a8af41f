package workqueue

import (
	"strconv"
	"sync"
	"testing"
	"time"

	clientgo "k8s.io/client-go/util/workqueue"
)

// benchQueue is the part of both queues the benchmarks drive.
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

func newOurs() benchQueue { return New(Config[string]{}) }

var benchKeys = func() []string {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "namespace-" + strconv.Itoa(i%37) + "/pod-" + strconv.Itoa(i)
	}
	return keys
}()

// BenchmarkThroughput: 8 producers Add b.N keys drawn from 10k, 8 workers
// Get and Done them until the queue is empty. ns/op is per Add.
func BenchmarkThroughput(b *testing.B) {
	for _, impl := range []struct {
		name string
		make func() benchQueue
	}{{"listwatch", newOurs}, {"client-go", newClientGo}} {
		b.Run(impl.name, func(b *testing.B) { benchThroughput(b, impl.make()) })
	}
}

func benchThroughput(b *testing.B, q benchQueue) {
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
	var prod sync.WaitGroup
	for p := range producers {
		prod.Go(func() {
			for i := p; i < b.N; i += producers {
				q.Add(benchKeys[i%len(benchKeys)])
			}
		})
	}
	prod.Wait()
	for q.Len() > 0 {
		time.Sleep(50 * time.Microsecond) // polling the real condition
	}
	b.StopTimer()
	q.ShutDownWithDrain()
	wg.Wait()
	total := 0
	handled.Range(func(_, v any) bool { total += v.(int); return true })
	b.ReportMetric(float64(total)/float64(b.N), "gets/add")
}

// BenchmarkAddWith1MQueued measures Add of a new item into a queue that
// already holds a million.
func BenchmarkAddWith1MQueued(b *testing.B) {
	for _, impl := range []struct {
		name string
		make func() benchQueue
	}{{"listwatch", newOurs}, {"client-go", newClientGo}} {
		b.Run(impl.name, func(b *testing.B) {
			q := impl.make()
			defer q.ShutDownWithDrain()
			for i := range 1_000_000 {
				q.Add("pre-" + strconv.Itoa(i))
			}
			keys := make([]string, b.N)
			for i := range keys {
				keys[i] = "new-" + strconv.Itoa(i)
			}
			b.ResetTimer()
			for i := range b.N {
				q.Add(keys[i])
			}
		})
	}
}
