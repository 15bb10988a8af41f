// Package bench is "listwatch bench": reproducible measurements of the
// list-watch path against any Kubernetes-compatible API server — a real
// kube-apiserver, kind, or listwatch — and of listwatch's client side
// against client-go's, in the same run.
//
// It grew from the first seed article's investigation: two ways of
// writing an informer were said to load the API server differently, and
// timing LIST with traces showed that paging was being ignored —
// kube-apiserver serves resourceVersion=0 from its watch cache and
// ignores limit there. "bench list" asks that question of any server.
//
// # Benchmarks
//
//   - RunList: times LIST per (page size, resourceVersion mode), following
//     continue tokens, and reports per-page and per-list latency, pages,
//     bytes, and whether limit was honoured (no page larger than limit).
//   - RunInformer: initial sync time, heap after sync, peak RSS and
//     update events per second for listwatch's informer (typed and
//     Unstructured), client-go's SharedIndexInformer (typed and dynamic)
//     and the seed article's two styles. Each runs in its own child
//     process (ChildCommand re-executes the binary; RunInformerChild is
//     the child's side), so memory figures are not shared. With
//     --replay each also syncs against a replay of what the server sent
//     it (a recording proxy first, then the recording, run IMPL@replay):
//     a server that does nothing but write, so that sync is about the
//     client's own cost.
//   - RunWatch: W watchers, E writes; delivery lag from each write's
//     response to each watcher's receipt, and the server's CPU time.
//   - RunQueue: workqueue throughput (producers × workers) and Add
//     latency on a large backlog, listwatch's beside client-go's.
//
// Run ties them together: it connects (Connect starts an embedded
// listwatch server when no kubeconfig is given), builds the fixture,
// runs the selected benchmarks and cleans up.
//
// # Fixtures
//
// Objects are named bench-0000000… in a bench namespace and labelled
// BenchLabel. --fixture selects their kind:
//
//   - configmaps (default): ~1 KiB ConfigMaps, alike but for the name.
//   - pods: ~8 KiB of JSON each, shaped like a production cluster's
//     Deployment pods (ProductionPod): every PodsPerReplicaSet consecutive pods
//     belong to one ReplicaSet (ownerReferences with controller and
//     blockOwnerDeletion) and share its labels (app.kubernetes.io/*,
//     tier, pod-template-hash), annotations (a config checksum,
//     restartedAt, prometheus.io/*), images and env; three ReplicaSets
//     (revisions) per app, 17 teams. Spec: an app container and a proxy
//     sidecar with images, args, env (values and fieldRefs), ports,
//     requests and limits, liveness and readiness probes, volume mounts;
//     ConfigMap, emptyDir and projected service-account volumes; three
//     tolerations, required node affinity, a node name among 100 nodes,
//     priority class. Status: Running, four conditions, host and pod IPs,
//     two container statuses with container IDs and image digests.
//     managedFields from kube-controller-manager (the create), and
//     kube-scheduler and kubelet (status subresource). listwatch serve
//     stores what it is sent, status and managedFields included; against
//     kube-apiserver, which drops status at create, the fixture writes it
//     through the status subresource (managedFields are then the server's
//     own).
//
// # Relist
//
// "bench informer --relist" measures memory while an informer relists:
// after the update burst the child makes the informer's open watch end
// with a 410 Expired ERROR (relistHook wraps both implementations'
// ListerWatchers; nothing inside either informer is touched), as a
// server does when the watch's resourceVersion has been compacted, and
// samples runtime/metrics every 2 ms until the relist's list has arrived
// and as long again (at least 2 s): the peak of heap object bytes (live
// or not yet collected, which depends on GOGC), the peak of the live heap
// as marked by each GC, and VmRSS, against the live heap just before.
//
// # Output
//
// Result is the JSON schema (SchemaVersion "listwatch.bench/v1"): every
// field is documented on its type, durations are float milliseconds
// (fields end in Ms), sizes are bytes (fields end in Bytes). Fields are
// only added within a schema version. WriteTable prints the same figures
// for people; package report draws them.
//
// # Caveats
//
//   - Events/s is measured from the first write of the burst to the
//     child seeing the last update, so on a server whose writes are slower
//     than the informer it measures the writes; WriteMs is reported beside
//     it so the reader can tell.
//   - With an embedded server, the server shares this process: "bench
//     watch" then reports the CPU of the whole process (watchers
//     included), marked serverCPUScope "process".
//   - LIST bytes are counted after HTTP decompression.
//   - The informer children are the same binary as the parent, so every
//     implementation carries the same baseline RSS; compare differences.
package bench
