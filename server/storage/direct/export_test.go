package direct

import "github.com/listwatch/listwatch/server/storage"

// NewWithPageSize is New with a small initial-events page, so tests
// cover initial states that span several pages.
func NewWithPageSize(s storage.Interface, n int64) *Reader {
	r := New(s)
	r.pageSize = n
	return r
}

var WithRevision = withRevision
