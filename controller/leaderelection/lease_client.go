package leaderelection

import (
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
func NewLeaseClient(r *client.Resource[*Lease]) LeaseClient { return r }

var _ LeaseClient = (*client.Resource[*Lease])(nil)
