package direct

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/listwatch/listwatch/server/storage"
)

// Reader is a storage.ListWatcher over a storage.Interface.
type Reader struct {
	store storage.Interface
	// pageSize is how many keys a watch's initial state is read in.
	pageSize int64
	// bookmarkInterval is Run's period; bookmarkWatches counts the open
	// watches that allow bookmarks (Run is idle while it is 0).
	bookmarkInterval time.Duration
	bookmarkWatches  atomic.Int64
}

var _ storage.ListWatcher = (*Reader)(nil)

// New returns a Reader over s. It starts nothing; Run makes bookmarks
// timely (see Run).
func New(s storage.Interface, opts ...Option) *Reader {
	r := &Reader{store: s, pageSize: initialPageSize, bookmarkInterval: DefaultBookmarkInterval}
	for _, o := range opts {
		o(r)
	}
	return r
}

// ErrInvalidResourceVersion: a read mode without the revision it needs,
// or an unknown one. The server validates requests first, so seeing it
// is a server bug.
var ErrInvalidResourceVersion = errors.New("direct: invalid resourceVersion")

// initialPageSize is how many keys a watch's initial state, or a
// filtered list, reads at a time.
const initialPageSize = 1000

// maxPageSize caps the growth of a filtered list's reads.
const maxPageSize = 10000

// readMode is what a resourceVersion and its match ask the store for.
type readMode struct {
	// exact, if positive, is the revision to read at.
	exact int64
	// minimum, if positive, is the revision the latest state must reach.
	minimum int64
}

// modeOf is what a position asks the store for.
func modeOf(pos storage.ListPosition) (readMode, error) {
	switch pos.Mode {
	case storage.ReadMostRecent, storage.ReadAny:
		// There is nothing staler than the latest state to serve.
		return readMode{}, nil
	case storage.ReadNotOlderThan, storage.ReadExact:
		if pos.Revision <= 0 {
			return readMode{}, fmt.Errorf("%w: %v without a revision", ErrInvalidResourceVersion, pos.Mode)
		}
		if pos.Mode == storage.ReadExact {
			return readMode{exact: pos.Revision}, nil
		}
		return readMode{minimum: pos.Revision}, nil
	}
	return readMode{}, fmt.Errorf("%w: unknown read mode %v", ErrInvalidResourceVersion, pos.Mode)
}

// checkMinimum fails when a read of the latest state at rev is older
// than the minimum asked for.
func checkMinimum(rev, minimum int64) error {
	if minimum > rev {
		return &storage.TooLargeResourceVersionError{Requested: minimum, Current: rev}
	}
	return nil
}
