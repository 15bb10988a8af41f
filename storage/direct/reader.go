package direct

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/wire"
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

// ErrInvalidResourceVersion: a resourceVersion that is not "", "0" or a
// positive decimal, or a match mode it cannot be combined with. The
// server validates requests first, so seeing it is a server bug.
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

// listMode interprets a LIST's resourceVersion as kube-apiserver does.
func listMode(rv, match string, limit int64) (readMode, error) {
	n, err := parseRV(rv)
	if err != nil {
		return readMode{}, err
	}
	switch match {
	case wire.MatchExact:
		if n == 0 {
			return readMode{}, fmt.Errorf("%w: Exact needs a resourceVersion other than 0", ErrInvalidResourceVersion)
		}
		return readMode{exact: n}, nil
	case wire.MatchNotOlderThan:
		return readMode{minimum: n}, nil
	case "":
		// Legacy: a paged list at N is a snapshot at N.
		if n > 0 && limit > 0 {
			return readMode{exact: n}, nil
		}
		return readMode{minimum: n}, nil
	}
	return readMode{}, fmt.Errorf("%w: unknown resourceVersionMatch %q", ErrInvalidResourceVersion, match)
}

// parseRV parses "", "0" or a positive decimal; "" and "0" give 0.
func parseRV(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	// ParseUint, as kube-apiserver: no sign, no spaces.
	u, err := strconv.ParseUint(rv, 10, 63)
	n := int64(u)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrInvalidResourceVersion, rv)
	}
	return n, nil
}

// checkMinimum fails when a read of the latest state at rev is older
// than the minimum asked for.
func checkMinimum(rev, minimum int64) error {
	if minimum > rev {
		return &storage.TooLargeResourceVersionError{Requested: minimum, Current: rev}
	}
	return nil
}
