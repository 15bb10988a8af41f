// Package leaderelection makes one of several replicas the leader, using a
// coordination.k8s.io/v1 Lease the way client-go and kube-controller-manager
// do, so it interoperates with them on the same lease.
//
// Types: Lease (the object, with MicroTime timestamps), LeaseClient (what
// the election needs from an API server; NewLeaseClient adapts the client
// package), Config and Callbacks, and Elector (one candidate).
//
// Basics:
//
//	leases := client.NewResource[*leaderelection.Lease](c, leaderelection.LeasesGVR).Namespace("kube-system")
//	e, err := leaderelection.New(leaderelection.Config{
//		Client: leaderelection.NewLeaseClient(leases), Namespace: "kube-system",
//		Name: "my-controller", Identity: podName, ReleaseOnCancel: true,
//	})
//	err = e.Run(ctx, leaderelection.Callbacks{
//		OnStartedLeading: func(ctx context.Context) { _ = ctrl.Run(ctx) },
//	})
//
// How it works: a candidate reads the lease; if nobody holds it, or the
// holder's record has not changed for LeaseDuration on this candidate's
// clock, it writes itself in as holder (acquireTime, renewTime,
// leaseTransitions+1). The API server's optimistic concurrency makes that
// write atomic: of two candidates, one gets 409 Conflict, re-reads and sees
// the winner. The leader rewrites renewTime every RetryPeriod; if it cannot
// for RenewDeadline, it stops leading, before followers (waiting
// LeaseDuration > RenewDeadline) take over. With ReleaseOnCancel, a
// leader whose context ends re-reads the lease and, if it still holds it,
// clears the holder (retrying on conflict), so a follower takes over at
// its next attempt; this also works when the last renewal was applied by
// the server but its answer never arrived.
//
// Caveats: leases bound, but do not eliminate, overlap: a leader paused
// longer than LeaseDuration−RenewDeadline (GC, a frozen VM) may act after a
// follower took over. Work that must never overlap needs fencing on the
// server side as well. Clocks are compared only with themselves, so skew
// between machines is harmless; a clock running fast or slow by more than
// the margin is not.
package leaderelection
