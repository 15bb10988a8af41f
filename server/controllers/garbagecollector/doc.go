// Package garbagecollector is Kubernetes' garbage collector
// (kube-controller-manager's "garbagecollector" controller) built on
// listwatch's own library: client for discovery and writes, one informer
// per resource for the graph, and two controller.Controllers for the work
// queues. It deletes objects whose owners are gone and carries out the
// orphan and foreground propagation policies the API server records as
// finalizers.
//
// There is one type, Controller: New builds it from a Config (a
// *client.Client, a logger, a Prometheus Registerer), Run runs it until its
// context ends and returns after every goroutine it started has ended.
//
//	gc, err := garbagecollector.New(garbagecollector.Config{Client: c, Logger: log, Registerer: reg})
//	err = gc.Run(ctx)
//
// # How it works
//
//   - Discovery: every resource whose preferred version supports delete,
//     list and watch (core and events.k8s.io events excepted, as in kube)
//     gets a monitor, an informer that keeps only apiVersion, kind and
//     metadata (managedFields dropped). Discovery is read again every
//     DiscoveryPeriod, at once when a CRD changes (the CRD monitor signals
//     it), and soon again while an established CRD's resource is not in
//     discovery yet. Monitors of resources that left discovery stop.
//   - The graph: one node per uid, with its ownerReferences and its
//     dependents. An owner not observed yet is a virtual node, which a
//     worker verifies with a GET. Informer events are applied one at a time
//     under a lock, as kube's single graph-builder goroutine does.
//   - attempt to delete (queue garbage_collector_attempt_to_delete, keys are
//     uids): reads the dependent live and each owner live, by name, with a
//     uid check (an absent-owner LRU of 500 spares repeated GETs). An owner
//     that is missing or has another uid dangles. No solid owner: the
//     dependent is deleted with preconditions on its uid and
//     resourceVersion, and the propagation policy its own finalizers ask
//     for (orphan, foregroundDeletion), Background otherwise. Some solid
//     owners: only the dangling references (and those to owners deleting
//     their dependents in the foreground) are removed. An owner waiting
//     for its dependents makes a dependent that has dependents of its own
//     go in the foreground, so chains propagate; when one of its dependents
//     is deleting dependents too, its own references are unblocked first,
//     to break cycles.
//   - Foreground: an owner with deletionTimestamp and foregroundDeletion
//     sends all its dependents to be deleted; once none with
//     blockOwnerDeletion=true remains in the graph, the finalizer is
//     removed and the server deletes the owner.
//   - Orphan (queue garbage_collector_attempt_to_orphan): an owner with
//     deletionTimestamp and the orphan finalizer has its reference removed
//     from every dependent the graph knows, then the finalizer.
//   - Invalid references: a namespaced dependent naming by uid an owner
//     observed in another namespace gets a Warning Event
//     OwnerRefInvalidNamespace and the reference is looked up in the
//     dependent's namespace, where it dangles. A cluster-scoped dependent
//     naming a namespaced owner is left alone (kube's
//     namespacedOwnerOfClusterScopedObjectErr).
//
// Workers start once every monitor has synced, or after
// InitialSyncTimeout, as kube's: every decision is checked against the
// server, so an unsynced monitor delays collection but cannot mislead it.
//
// # Metrics and logs
//
// With Config.Registerer: controller_reconcile_* and workqueue_* (names
// garbage_collector_attempt_to_delete and garbage_collector_attempt_to_orphan,
// kube's queue names), the informers' reflector_* and informer_* series
// (reflector names "garbagecollector <resource>"), and
// garbagecollector_controller_resources_sync_error_total (kube's), plus
// garbagecollector_controller_deletions_total{propagation_policy},
// garbagecollector_controller_monitored_resources and
// garbagecollector_controller_graph_nodes. Logs carry
// controller=garbagecollector; deletions and finalizer removals log at
// Info, graph details at Debug.
//
// # Differences from kube
//
//   - Writes use JSON merge patches carrying the resourceVersion just read
//     (re-read and retried up to 5 times on conflict), for every resource;
//     kube tries a strategic merge patch first and falls back to that.
//   - An ownerReference whose apiVersion the server does not serve the kind
//     in is looked up in the group's preferred version serving the kind
//     (the collector only reads metadata); kube retries it as a REST
//     mapping error until discovery knows that version.
//   - On a partial discovery no monitor is stopped (kube keeps only those of
//     the failed groups).
//   - Informers hold full objects reduced to their metadata by a Transform;
//     kube's are metadata-only from the server (PartialObjectMetadata).
//   - The graph has one lock where kube has one goroutine plus per-field
//     locks; the order of events per resource is the informer's, as in
//     kube.
//   - Events are written best-effort from a buffer of 100 (kube's
//     broadcaster also drops), without kube's event aggregation.
//   - No ignored-resources option and no /debug/controllers graph dump.
package garbagecollector
