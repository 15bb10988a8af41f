// Package storage defines the key-value interface that the server stores
// objects through, and the conventions every implementation keeps.
//
// # Keys and revisions
//
// Keys are "/registry/[{group}/]{resource}/[{namespace}/]{name}". Every
// write gets a revision from a single, cluster-wide, strictly increasing
// counter (etcd's revision). An object's resourceVersion is the revision of
// its last write (etcd's mod revision); a list's resourceVersion is the
// revision it was read at.
//
// # Values
//
// A value is an object's JSON. Values are written without
// metadata.resourceVersion; every value an implementation returns has it
// set to the value's revision (see WithResourceVersion), so callers can
// send it to clients as is.
//
// Implementations: storage/etcd (embedded or external etcd) and
// storage/cache (a watch cache over another implementation).
package storage
