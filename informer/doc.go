// Package informer keeps a local, indexed, eventually consistent copy of one
// kind of Kubernetes resource and tells handlers about every change to it.
//
// There are only a few types:
//
//   - ListerWatcher: the two calls the informer needs from the API server
//     (a *client.Resource[T] is one; NewListWatchFromClient adds selectors).
//   - Reflector: lists (paged, or as a streaming initial list), then watches
//     from the list's resourceVersion. A dropped connection, a 5xx or a 429
//     reopens the watch from the last resourceVersion after a jittered
//     backoff (or the server's Retry-After); it lists again only on 410,
//     on a resourceVersion the server refuses, or after
//     DefaultRelistAfterWatchFailures failed watches in a row. It feeds
//     what it sees into a DeltaQueue.
//   - DeltaQueue: per-object queued changes (Added, Updated, Deleted,
//     Replaced, Sync), popped one key at a time.
//   - Store: the thread-safe, indexed cache the informer keeps.
//   - Informer: one pop loop that applies deltas to the Store and fans them
//     out to every registered Handler, each with its own buffer.
//   - Factory: shares one Informer per (type, resource, namespace, selectors).
//
// # Basics
//
//	inf, _ := informer.New(lw, informer.Options[*corev1.Pod]{})
//	reg, _ := inf.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{
//		AddFunc: func(p *corev1.Pod, initial bool) { ... },
//	}, informer.HandlerOptions{})
//	go inf.Run(ctx)            // blocks until ctx ends
//	informer.WaitForCacheSync(ctx, reg.HasSynced)
//	pods := inf.Lister().List()
//
// # Guarantees
//
//   - Convergence: after every fault the reflector relists and Replace turns
//     the difference into deltas, so the Store ends equal to the server's
//     state, and each handler sees, per key, a consistent history: an Add
//     before any Update, nothing after a Delete until the next Add. (One
//     exception, as in client-go: an added or updated object whose
//     Options.Transform fails is logged and skipped, and the store keeps
//     what it had for that key until a later change or relist.)
//   - Re-creations are not updates: an object deleted and created again
//     under the same name while the watch was down comes back from the
//     relist with another UID; handlers get OnDelete(old, true) and then
//     OnAdd(new), as the watch would have told them, never an OnUpdate from
//     one object to another. (Objects whose type has no GetUID are compared
//     by key only; see object.UID.)
//   - Never backwards: events and bookmarks whose resourceVersion is not
//     newer than the last one seen are dropped. Kubernetes calls
//     resourceVersions opaque; both kube-apiserver and listwatch's server use
//     etcd revisions, so the reflector compares them as unsigned integers
//     whenever both parse, and accepts the event when either does not.
//   - Isolation: a slow handler only grows its own buffer; it never blocks
//     the pop loop or another handler.
//   - Typed deletes: OnDelete receives the last known object and whether its
//     final state is unknown (deleted while the watch was down); there are
//     no tombstones to type-assert.
//
// # Memory
//
// Handlers and the Lister see exactly the objects the server sent, apart
// from the user's own Transform. Within that rule the informer holds less
// than client-go's does (see README, Performance):
//
//   - Sharing (default; Options.DisableDedup turns it off): equal parts of
//     stored objects are held once. Strings everywhere; for typed objects
//     every pointed-to struct, slice and map whose value equals one seen
//     before, children first (so the containers, env, probes, resources,
//     tolerations, labels and managedFields entries of a ReplicaSet's
//     replicas collapse into one copy); for Unstructured every equal
//     subtree. Values never change; memory is shared, which is one more
//     reason never to modify a stored object. The tables that find equal
//     parts are bounded (DefaultDedupEntries) and start afresh past it.
//   - Decoding once: without a Transform, a typed informer's lists (in
//     protobuf, for k8s.io/api types) decode the parts of an object's
//     metadata, spec and status that are pointers, slices or maps once
//     per distinct bytes in the list (a ReplicaSet's replicas have
//     byte-identical containers, volumes, tolerations, labels and owner
//     references), and every object with those bytes gets the same
//     value, which sharing then walks once. The values are exactly what
//     the type's Unmarshal gives. It is on only when the informer lists
//     through a *client.Resource[T] (or NewListWatchFromClient over one,
//     or ListWatchFuncs with ListsUntouched) and has no Transform: a
//     Transform, or a ListerWatcher of the user's own, may modify the
//     objects it is given, which must then be each object's own.
//   - Lists: a page is decoded as it arrives and handed on 500 items at a
//     time when the ListerWatcher can (ChunkLister; *client.Resource[T]
//     can, in protobuf and JSON), so a page of everything, which
//     kube-apiserver sends for the first list, is never held whole. The
//     first list of an empty informer is queued chunk by chunk
//     (EarlyLister) and stored while the rest is read; HasSynced waits
//     for its end.
//   - Relists: a list is handed to the queue chunk by chunk as it arrives
//     (ListPreparer); an object the list shows with the UID and
//     resourceVersion already stored keeps the stored copy and the listed
//     one is dropped at once, so a relist holds a few chunks more than
//     the steady state instead of two copies of everything (the next page
//     is fetched while the last one is handed over, so that the client
//     does not wait on the server between pages). The kept copy
//     equals the listed one by the API's contract (every write changes
//     resourceVersion); it is not transformed again.
//   - Indexes are built on their first lookup and kept from then on.
//   - managedFields are kept by default, as client-go does; Transform with
//     DropManagedFields (Unstructured) or DropManagedFieldsOf (any type)
//     drops them, if no handler reads them.
//
// # Metrics
//
// ReflectorOptions.Metrics takes a MetricsProvider; NewPrometheusProvider
// exports client-go's reflector_* metrics (lists, watches, short watches,
// durations, items, last resource version) plus reflector_relists_total by
// RelistReason and the informer_* queue gauges. Nil records nothing.
//
// # Caveats
//
// Objects handed to handlers and returned by the Lister are the stored
// pointers, shared by every reader, and share parts with each other (see
// Memory). Never mutate them; copy first (DeepCopy copies everything).
// A ListerWatcher must hand over objects nobody else holds: the informer
// rewrites their parts in place.
//
// Handlers run on their own goroutine, one notification at a time per
// handler. Registration.Remove drops what is buffered and does not wait
// for the handler: one last call may start after it returns.
//
// Which HasSynced: a controller waits on the Registration's (the handle
// AddEventHandler returns), as client-go advises: it means the informer
// has listed and that handler has handled every object of the list, so
// the work queue it feeds holds a key for each. The Informer's only means
// the store is filled; handlers may still be catching up. Use it for code
// that reads the Lister and registers no handler.
package informer
