package server

import (
	"context"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/direct"
)

// defaultReader is the ListWatcher used when Config.Reader is nil: reads
// straight from the store, with no cache. run is its background work
// (progress requests that make its bookmarks timely), which Server.Run
// runs.
func defaultReader(s storage.Interface) (reader storage.ListWatcher, run func(context.Context) error) {
	r := direct.New(s)
	return r, r.Run
}
