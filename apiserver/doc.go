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
package apiserver
