// Package controller runs a Reconciler over the keys of a work queue: the
// loop at the heart of every Kubernetes controller.
//
// There are three types: Reconciler (your code, or a ReconcilerFunc),
// Result (what to do after a clean reconcile), and Controller (the
// workers). A typical wiring, with an informer's handlers feeding keys:
//
//	var c *controller.Controller
//	reg, err := podInformer.AddEventHandler(handlers, informer.HandlerOptions{})
//	// handlers: on add/update/delete call c.Enqueue(object.Key(obj));
//	// on resync call c.EnqueueLowPriority(key).
//	c, err = controller.New(reconciler, controller.Options{
//		Name:      "pods",
//		Workers:   4,
//		HasSynced: []func() bool{reg.HasSynced}, // the registration's
//	})
//	err = c.Run(ctx) // blocks until ctx ends and in-flight work is done
//
// What happens to a key after Reconcile returns:
//
//   - nil error, zero Result: the key is forgotten (its backoff resets).
//   - Result.RequeueAfter > 0: retried after that delay, backoff reset.
//   - Result.Requeue: retried with rate limiting.
//   - an error: retried with rate limiting (5ms doubling to 1000s by
//     default, and 10 retries a second overall) up to Options.MaxRetries
//     errors in a row (a reconcile without an error, Result.Requeue
//     included, starts the count again), then dropped and logged. An informer resync or a new event brings
//     a dropped key back.
//   - TerminalError(err): logged and forgotten, never retried.
//   - a panic: recovered, logged with its stack, counted in
//     controller_reconcile_panics_total, and retried like an error.
//
// Shutdown: when Run's context ends, no new key is handed out, queued keys
// are dropped, and Run waits for in-flight reconciles. Their context stays
// alive for Options.ShutdownGracePeriod so they can finish cleanly.
//
// Metrics (with Options.Registerer): controller_reconcile_total{controller,
// result}, controller_reconcile_panics_total{controller},
// controller_reconcile_duration_seconds{controller}, and the queue's
// workqueue_* series under name=<controller name>.
//
// Subpackage leaderelection runs a controller on one replica at a time.
package controller
