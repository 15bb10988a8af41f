// Package wire holds the Kubernetes wire types that listwatch speaks: the
// list envelope, watch events, Status errors, list options, discovery
// documents and the Table form that kubectl asks for.
//
// Only the shapes are here; behaviour lives in client and server. Field names
// and JSON tags follow Kubernetes exactly, so a document written by
// kube-apiserver decodes into these types and back without loss of meaning.
package wire
