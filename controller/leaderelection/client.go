package leaderelection

import (
	"context"
)

// LeaseClient is what leader election needs from an API server: the Leases
// of one namespace. NewLeaseClient adapts a client.Resource to it.
type LeaseClient interface {
	// Get returns the named lease, or an error for which client.IsNotFound
	// holds if there is none.
	Get(ctx context.Context, name string) (*Lease, error)
	// Create creates a lease; AlreadyExists if another candidate won.
	Create(ctx context.Context, lease *Lease) (*Lease, error)
	// Update replaces a lease; a stale resourceVersion fails with an error
	// for which client.IsConflict holds.
	Update(ctx context.Context, lease *Lease) (*Lease, error)
}
