package server

import (
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/direct"
)

// defaultReader is the ListWatcher used when Config.Reader is nil: reads
// straight from the store, with no cache.
func defaultReader(s storage.Interface) (storage.ListWatcher, error) {
	return direct.New(s), nil
}
