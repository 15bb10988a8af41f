package leaderelection

import (
	"context"

	"github.com/listwatch/listwatch/client"
)

// LeasesGVR is the resource leader election reads and writes.
var LeasesGVR = client.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// NewLeaseClient adapts a namespaced client resource of Leases to
// LeaseClient:
//
//	leases := client.NewResource[*leaderelection.Lease](c, leaderelection.LeasesGVR).Namespace("kube-system")
//	e, err := leaderelection.New(leaderelection.Config{Client: leaderelection.NewLeaseClient(leases), …})
//
// The client's errors are *wire.Status values, so NotFound and Conflict
// reach the elector as it expects.
func NewLeaseClient(r *client.Resource[*Lease]) LeaseClient { return leaseResource{r} }

// leaseResource is a client.Resource without its per-call options, which
// leader election does not use.
type leaseResource struct{ r *client.Resource[*Lease] }

var _ LeaseClient = leaseResource{}

func (l leaseResource) Get(ctx context.Context, name string) (*Lease, error) {
	return l.r.Get(ctx, name)
}

func (l leaseResource) Create(ctx context.Context, lease *Lease) (*Lease, error) {
	return l.r.Create(ctx, lease)
}

func (l leaseResource) Update(ctx context.Context, lease *Lease) (*Lease, error) {
	return l.r.Update(ctx, lease)
}
