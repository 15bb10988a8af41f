package controller

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
)

// processNextItem reconciles one key; it returns false when the queue has
// shut down and the worker should exit.
func (c *Controller) processNextItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	start := time.Now()
	res, err, panicked := c.reconcileSafely(ctx, key)
	c.metrics.duration.Observe(time.Since(start).Seconds())
	c.handleResult(key, res, err, panicked)
	return true
}

// reconcileSafely calls the reconciler, turning a panic into an error so a
// bad key cannot take the process down.
func (c *Controller) reconcileSafely(ctx context.Context, key string) (res Result, err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			err = fmt.Errorf("controller: reconcile panicked: %v", r)
			c.log.Error("reconcile panicked", "key", key, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	res, err = c.reconciler.Reconcile(ctx, key)
	return res, err, false
}

// handleResult decides the key's future: forget it, retry it with backoff,
// or retry it at a set time.
func (c *Controller) handleResult(key string, res Result, err error, panicked bool) {
	if !panicked && (err == nil || IsTerminal(err)) {
		c.clearFailures(key)
	}
	switch {
	case panicked:
		c.metrics.panics.Inc()
		c.count(resultPanic)
		c.retry(key, err)
	case err != nil && IsTerminal(err):
		c.count(resultTerminal)
		c.log.Error("reconcile failed, not retrying", "key", key, "err", err)
		c.queue.Forget(key)
	case err != nil:
		c.count(resultError)
		c.retry(key, err)
	case res.RequeueAfter > 0:
		c.count(resultRequeueAfter)
		c.queue.Forget(key)
		c.queue.AddAfter(key, res.RequeueAfter)
	case res.Requeue:
		c.count(resultRequeue)
		c.queue.AddRateLimited(key)
	default:
		c.count(resultSuccess)
		c.queue.Forget(key)
	}
}

// retry requeues a failed key with rate limiting, or drops it once it has
// failed MaxRetries times in a row.
func (c *Controller) retry(key string, err error) {
	c.failuresMu.Lock()
	n := c.failures[key]
	drop := c.maxRetries >= 0 && n >= c.maxRetries
	if drop {
		delete(c.failures, key)
	} else {
		c.failures[key] = n + 1
	}
	c.failuresMu.Unlock()
	if drop {
		c.log.Error("reconcile failed, dropping key after max retries", "key", key, "retries", n, "err", err)
		c.queue.Forget(key)
		return
	}
	c.log.Info("reconcile failed, will retry", "key", key, "retries", n, "err", err)
	c.queue.AddRateLimited(key)
}

// clearFailures restarts key's count of failures: it reconciled without
// an error.
func (c *Controller) clearFailures(key string) {
	c.failuresMu.Lock()
	delete(c.failures, key)
	c.failuresMu.Unlock()
}

func (c *Controller) count(result string) { c.metrics.total.WithLabelValues(result).Inc() }
