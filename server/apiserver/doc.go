// Package apiserver assembles a complete listwatch API server: storage
// (embedded or external etcd), the watch cache, the API handlers, the
// security and limit filters, TLS, first-start credentials and the
// kubeconfig. It is what `listwatch serve` runs, and what tests and the
// demo start in-process.
//
//	srv, err := apiserver.New(apiserver.Options{DataDir: dir, Port: 0})
//	go srv.Run(ctx)            // blocks until ctx ends
//	<-srv.Ready()              // serving; srv.URL(), srv.KubeconfigPath()
//
// New only validates; Run starts everything and, when ctx ends, stops it
// all and returns after every goroutine it started has exited.
//
// Inside Run there are three steps. First what outlives serving is opened:
// the data-dir lock (embedded etcd only), the credentials, etcd. Then
// build constructs the server on them and starts nothing: the store, the
// direct reader, the cache set, the API, the filter chain, the bound
// listener, the kubeconfig. Last, serve runs the parts (API, direct
// reader, caches, compactor, HTTPS and its shutdown) on one run group: the
// first part to fail stops the others, and Run returns that error once
// all have stopped.
package apiserver
