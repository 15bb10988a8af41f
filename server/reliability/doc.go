// Package reliability holds listwatch's reliability suites: tests that try
// hard to break the promises in RELIABILITY.md and report the numbers they
// checked. The package has no non-test code besides this comment.
//
// The suites, one file each:
//
//   - chaos_test.go: informers through a fault-injecting proxy
//     (internal/testsupport/faultproxy) while writers churn keys and
//     compaction forces 410s; every cache must converge to a fresh LIST and
//     every handler must see a consistent per-key history.
//   - crash_test.go: kill -9 of the listwatch serve process, and of external
//     etcd members, during a write storm; every acknowledged write survives
//     and resourceVersions never go backwards.
//   - replicas_test.go: two servers on one 3-member etcd cluster; an
//     informer and kubectl switch between them.
//   - soak_test.go: many concurrent watchers checked event by event against
//     the write log, LIST storms, runtime stats and in-flight limits (429).
//   - crdchurn_test.go: CRDs created and deleted over and over, each with
//     objects, a cache and a watcher; goroutines and heap must stay flat.
//   - hostile_test.go: slowloris, huge headers, deep JSON, huge objects,
//     invalid UTF-8, garbage continue tokens and selectors, wrong content
//     types.
//
// Short versions run in go test; LISTWATCH_LONG=1 runs the long ones. A
// chaos seed that fails is printed and replays with -args -seed=N.
package reliability
