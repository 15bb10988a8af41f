package server

import (
	"net/url"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// listOptions parses and validates LIST and WATCH query parameters as
// kube-apiserver does (storage.ParseReadSpec): syntax errors are 400s;
// forbidden combinations are a 422 Invalid about ListOptions.meta.k8s.io.
func listOptions(q url.Values) (storage.ReadSpec, error) {
	return storage.ParseReadSpec(q)
}

// watchOptions is listOptions for a WATCH, on a /watch/ path too
// (storage.ParseWatchSpec).
func watchOptions(q url.Values) (storage.ReadSpec, error) {
	return storage.ParseWatchSpec(q)
}

// deleteCollectionPageSize is how many objects a delete of a collection
// lists at a time when the request sets no limit: kube's
// deleteCollectionPageSize (registry/generic/registry/store.go). A
// variable, as there, so that tests can page through a few objects.
var deleteCollectionPageSize int64 = 10000

// deleteCollectionOptions decodes and validates the list options of a
// DELETE on a collection as kube-apiserver's handler does, with a LIST's
// rules; paged says the request set a limit, so only its first page is
// deleted (see storage.DecodeDeleteCollectionOptions). storage.SpecOf
// then reads them as kube's store does.
func deleteCollectionOptions(q url.Values) (o wire.ListOptions, paged bool, err error) {
	return storage.DecodeDeleteCollectionOptions(q, deleteCollectionPageSize)
}
