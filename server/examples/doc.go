// Package examples holds runnable, tested Example functions (in
// examples_test) that show listwatch's client side written in the two
// styles the seed article compares, against an in-process listwatch
// server: a hand-built ListWatch, informer, work queue and worker loop, and
// the factory style with a controller.Controller. README.md maps each to
// the client-go code it replaces.
//
// The package has no code of its own; run the examples with
//
//	go test -race ./examples
package examples
