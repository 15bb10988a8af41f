// Package workqueue is the queue between informer event handlers and
// controller workers: handlers Add keys, workers Get a key, reconcile it,
// and call Done.
//
// There is one type, Queue[T], generic over a comparable item (usually a
// "namespace/name" key string), built by New. Its guarantees:
//
//   - Stingy: an item is queued at most once. Adding an item that is already
//     queued does nothing (it keeps its place); adding an item that is being
//     processed queues it again when Done is called, so it is processed once
//     more, never by two workers at the same time.
//   - Fair: items are handed out in the order they were first added, so a
//     key that is re-added over and over cannot push others back.
//   - Prioritised: AddLowPriority (for periodic resyncs) queues behind every
//     normal Add, yet cannot starve: while both kinds wait, no more than
//     Config.LowPriorityEvery normal items are handed out in a row.
//   - Multiple consumers: any number of goroutines may Get at once.
//   - Shutdown: ShutDown makes every Get return shutdown=true at once and
//     drops what was queued; ShutDownWithDrain also waits until the items
//     being processed are Done. Unlike client-go, a queue that shuts down
//     does not hand out its backlog first: a controller that stops should
//     stop promptly, and the next one relists anyway.
//
// Delays and retries: AddAfter adds an item later (a repeated AddAfter keeps
// the earliest time); AddRateLimited adds it after the delay its
// RateLimiter chooses, and Forget resets that history. Delayed items sit in
// one min-heap driven by one timer in Run, which the owner runs for the
// life of the queue:
//
//	q := workqueue.New(workqueue.Config[string]{Name: "pods"})
//	go func() { errc <- q.Run(ctx) }() // delivers AddAfter/AddRateLimited
//	for {
//		key, shutdown := q.Get()
//		if shutdown {
//			break
//		}
//		if err := sync(key); err != nil {
//			q.AddRateLimited(key)
//		} else {
//			q.Forget(key)
//		}
//		q.Done(key)
//	}
//
// New starts no goroutine, so a test can drive a queue step by step; only
// delayed adds need Run. The controller package does all of this for you.
//
// # Lifecycle
//
// A queue has one life, from New to ShutDown, and at most one goroutine,
// Run's:
//
//   - ShutDown (or ShutDownWithDrain) ends the queue. It is kept, as in
//     client-go, because the queue's consumers need it: Get takes no
//     context, and ShutDown is what makes every blocked Get return
//     shutdown=true. ShutDownWithDrain lets a stopping owner wait for
//     in-flight items while the workers still call Done.
//   - Run(ctx) is the delay pump, not a second way to stop the queue. It
//     returns nil when ctx ends or the queue shuts down, whichever is
//     first, and holds no goroutine after it returns. Its end does not
//     shut the queue down: an owner that lets workers finish after ctx
//     ends (a grace period) still needs Add and Done to work.
//
// So an owner runs Run(ctx) for as long as it uses delayed adds, and ends
// the queue with ShutDown and then waits for Run; the controller package
// does exactly that. Without Run, AddAfter and AddRateLimited items wait
// and everything else works.
//
// Rate limiters: ExponentialBackoff (per item), TokenBucket (overall) and
// MaxOf to combine them; DefaultControllerRateLimiter is client-go's default
// (5ms·2ⁿ capped at 1000s, and 10 qps with bursts of 100).
//
// Performance: the queue is client-go's design — one mutex over a map of
// item states (dirty, processing, low priority) and the hand-out order —
// plus the low-priority lane. Each call touches one map entry (client-go's
// touch two or three sets), and the order is kept in two FIFOs of
// fixed-size blocks, so an Add into a queue of a million items never
// stalls under the lock to copy them. An earlier version spread the item
// states over 64 locked shards with a hash table of its own. It did not
// make a controller faster: in a controller-level benchmark (informer
// events, a store, 1, 2 or 4 workers and a small reconcile, against
// client-go's queue in the same run) both versions range from somewhat
// slower to somewhat faster than client-go from run to run: even with the
// cheapest reconcile, queue calls are about a fifth of a controller's CPU,
// the store, allocations, reconcile and GC the rest. So the shards were
// removed. The benchmark is in the server module's compat/workqueue
// package; the README gives its figures.
//
// Metrics: pass a MetricsProvider, such as NewPrometheusProvider, which
// exports client-go's workqueue_* metric names labelled by queue name.
package workqueue
