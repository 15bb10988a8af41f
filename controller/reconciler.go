package controller

import (
	"context"
	"time"
)

// Reconciler brings the world in line with the desired state of the object
// named by key ("namespace/name"). It must be idempotent: it sees only the
// key, never the event, and may be called again for the same key at any time.
type Reconciler interface {
	// Reconcile returns a nil error and a zero Result when the key is done.
	// A non-nil error retries the key with rate limiting (unless it is a
	// TerminalError); Result asks for a retry without an error. ctx ends
	// when the controller's shutdown grace period is over.
	Reconcile(ctx context.Context, key string) (Result, error)
}

// ReconcilerFunc adapts a function to a Reconciler.
type ReconcilerFunc func(ctx context.Context, key string) (Result, error)

// Reconcile implements Reconciler.
func (f ReconcilerFunc) Reconcile(ctx context.Context, key string) (Result, error) {
	return f(ctx, key)
}

var _ Reconciler = ReconcilerFunc(nil)

// Result tells the controller what to do with a key that reconciled without
// error. It is ignored when Reconcile returns an error.
type Result struct {
	// Requeue retries the key with rate limiting (the backoff grows).
	Requeue bool
	// RequeueAfter, when positive, retries the key once that much time has
	// passed, and resets its backoff. It takes precedence over Requeue.
	RequeueAfter time.Duration
}
