// Package workqueue holds no code of its own: its tests compare the
// library's work queue (github.com/listwatch/listwatch/workqueue) with
// client-go's (k8s.io/client-go/util/workqueue) through their exported
// APIs only. The library may not import k8s.io, so every side-by-side test
// and benchmark of the two lives here, outside it.
//
// The benchmark that decides whether the library's queue is worth its
// code is BenchmarkController: informer-style events, a store, a queue,
// 1, 2 or 4 workers and a small reconcile, for both queues in one run:
//
//	go test -run '^$' -bench Controller -benchtime 300000x ./server/compat/workqueue/
//
// The micro-benchmarks (BenchmarkThroughput and friends) isolate single
// queue operations; read their doc comments before comparing their ns/op
// across machines.
package workqueue
