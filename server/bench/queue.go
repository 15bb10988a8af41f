package bench

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	cgworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/listwatch/listwatch/workqueue"
)

// QueueOptions configure "bench queue". Zero fields take the brief's
// defaults: 8 producers, 8 workers, 10k keys each added 10 times, and
// Add latency measured on a queue holding 1M items.
type QueueOptions struct {
	Producers, Workers int
	Keys               int
	// AddsPerKey is how many times each key is added over the run.
	AddsPerKey int
	// Queued is the backlog for the Add-latency phase; LatencySamples
	// how many Adds are timed there.
	Queued, LatencySamples int
	// Rounds of the throughput phase per implementation, alternating
	// between them; the median round is reported. Default 3: on a
	// shared 2-core machine one round swings by a factor of several.
	Rounds int
}

// workQueue is the part of both queues the benchmark drives.
type workQueue interface {
	Add(string)
	Get() (string, bool)
	Done(string)
	Len() int
	ShutDown()
}

type clientGoQueue struct {
	cgworkqueue.TypedRateLimitingInterface[string]
}

// RunQueue measures listwatch's workqueue and client-go's
// TypedRateLimitingQueue with the same load, one after the other.
func RunQueue(ctx context.Context, opts QueueOptions) (*QueueResult, error) {
	if opts.Producers <= 0 {
		opts.Producers = 8
	}
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Keys <= 0 {
		opts.Keys = 10_000
	}
	if opts.AddsPerKey <= 0 {
		opts.AddsPerKey = 10
	}
	if opts.Queued <= 0 {
		opts.Queued = 1_000_000
	}
	if opts.LatencySamples <= 0 {
		opts.LatencySamples = 100_000
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 3
	}
	res := &QueueResult{Producers: opts.Producers, Workers: opts.Workers, Keys: opts.Keys,
		Adds: opts.Keys * opts.AddsPerKey, Queued: opts.Queued}
	impls := []struct {
		name string
		make func() workQueue
	}{
		{"listwatch", func() workQueue { return workqueue.New(workqueue.Config[string]{Name: "bench"}) }},
		{"client-go", func() workQueue {
			return clientGoQueue{cgworkqueue.NewTypedRateLimitingQueue(cgworkqueue.DefaultTypedControllerRateLimiter[string]())}
		}},
	}
	keys := make([]string, max(opts.Keys, opts.Queued+opts.LatencySamples))
	for i := range keys {
		keys[i] = fmt.Sprintf("bench/key-%07d", i)
	}
	type round struct {
		took      time.Duration
		processed int
	}
	rounds := make([][]round, len(impls))
	for range opts.Rounds {
		for i, impl := range impls {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			q := impl.make()
			took, processed := queueThroughput(q, opts, keys[:opts.Keys])
			q.ShutDown()
			rounds[i] = append(rounds[i], round{took, processed})
			runtime.GC()
		}
	}
	for i, impl := range impls {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		slices.SortFunc(rounds[i], func(a, b round) int { return cmp.Compare(a.took, b.took) })
		med := rounds[i][len(rounds[i])/2]
		st := QueueStats{Impl: impl.name, AddsPerSec: float64(res.Adds) / med.took.Seconds(), Processed: med.processed}
		q := impl.make()
		st.AddLatency = addLatency(q, keys[:opts.Queued], keys[opts.Queued:opts.Queued+opts.LatencySamples])
		q.ShutDown()
		runtime.GC()
		res.Impls = append(res.Impls, st)
	}
	return res, nil
}

// queueThroughput runs producers adding every key AddsPerKey times and
// workers draining the queue, and returns the time until the last add
// was processed.
func queueThroughput(q workQueue, opts QueueOptions, keys []string) (time.Duration, int) {
	var processed, busy atomic.Int64
	var workers, producers sync.WaitGroup
	for range opts.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				busy.Add(1)
				processed.Add(1)
				q.Done(k)
				busy.Add(-1)
			}
		}()
	}
	start := time.Now()
	for p := range opts.Producers {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for range opts.AddsPerKey {
				for i := p; i < len(keys); i += opts.Producers {
					q.Add(keys[i])
				}
			}
		}()
	}
	producers.Wait()
	// Drained: nothing queued and no worker between Get and Done. A key
	// re-added while processing is queued again by Done, before busy
	// drops. The only blind spot is a worker between Get's return and
	// busy.Add; requiring the state to hold twice in a row, with
	// processed unchanged and a yield between, makes missing it need a
	// worker descheduled for that whole interval, and costs at most one
	// item of the count.
	for stable := 0; stable < 2; {
		before := processed.Load()
		if busy.Load() == 0 && q.Len() == 0 && busy.Load() == 0 {
			runtime.Gosched()
			if processed.Load() == before && q.Len() == 0 && busy.Load() == 0 {
				stable++
				continue
			}
		}
		stable = 0
		runtime.Gosched()
	}
	took := time.Since(start)
	q.ShutDown()
	workers.Wait()
	return took, int(processed.Load())
}

// addLatency fills q with backlog keys, then times each Add of a new key.
func addLatency(q workQueue, backlog, fresh []string) Latency {
	for _, k := range backlog {
		q.Add(k)
	}
	lat := make([]time.Duration, len(fresh))
	for i, k := range fresh {
		t0 := time.Now()
		q.Add(k)
		lat[i] = time.Since(t0)
	}
	return Summarize(lat)
}
