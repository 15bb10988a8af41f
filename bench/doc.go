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
//     the child's side), so memory figures are not shared.
//   - RunWatch: W watchers, E writes; delivery lag from each write's
//     response to each watcher's receipt, and the server's CPU time.
//   - RunQueue: workqueue throughput (producers × workers) and Add
//     latency on a large backlog, listwatch's beside client-go's.
//
// Run ties them together: it connects (Connect starts an embedded
// listwatch server when no kubeconfig is given), builds the fixture
// (Fixture: ~1 KiB ConfigMaps named bench-0000000… in a bench namespace,
// labelled BenchLabel), runs the selected benchmarks and cleans up.
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
