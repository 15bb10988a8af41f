package server

import (
	"bytes"

	"github.com/listwatch/listwatch/server/storage"
)

// unchangedWrite reports whether writing value over the stored kv would
// store the same bytes: an update, patch or status write that changes
// nothing. As kube's storage (GuaranteedUpdate compares the new bytes with
// the stored ones), such a write is not made: the answer is the stored
// object with its resourceVersion, and watchers see no event. kubectl
// prints "(no change)" for it. The comparison is of the stored forms, so
// it ignores resourceVersion and nothing else. A built-in object is
// stored as kube reads it back, defaulted once more (encodeInto), where
// kube's etcd holds it without the defaults its reads add: a write that
// only adds those (the first after a Job's create, which gained its
// labels so) is one on kube, none here (README).
func unchangedWrite(value []byte, kv storage.KV) bool {
	withRV, err := storage.WithResourceVersion(value, kv.Revision)
	return err == nil && bytes.Equal(withRV, kv.Value)
}
