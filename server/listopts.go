package server

import (
	"net/url"

	"github.com/listwatch/listwatch/server/storage"
)

// listOptions parses and validates LIST and WATCH query parameters as
// kube-apiserver does (storage.ParseReadSpec): syntax errors are 400s;
// forbidden combinations are a 422 Invalid about ListOptions.meta.k8s.io.
func listOptions(q url.Values) (storage.ReadSpec, error) {
	return storage.ParseReadSpec(q)
}
