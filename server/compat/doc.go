// Package compat holds the tests of the library (the repository's root
// module) that need a Kubernetes or listwatch server, client-go or
// k8s.io/api as an oracle. They live in the server module so that the
// library's go.mod requires none of those: a program that imports the
// library inherits no Kubernetes, etcd or gRPC versions from it.
package compat
