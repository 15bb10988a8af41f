package direct

import (
	"context"
	"errors"
	"fmt"

	"github.com/listwatch/listwatch/server/storage"
)

// GetList returns one page of the objects under prefix. See the package
// documentation for the resourceVersion modes.
func (r *Reader) GetList(ctx context.Context, prefix string, opts storage.GetListOptions) (storage.ListPage, error) {
	start, rev, err := r.startOf(prefix, opts)
	if err != nil {
		return storage.ListPage{}, err
	}
	if opts.Predicate.Empty() {
		return r.listAll(ctx, prefix, start, rev, opts)
	}
	return r.listFiltered(ctx, prefix, start, rev, opts)
}

// listStart is where a list begins and what it must see.
type listStart struct {
	key  string // first key to read; "" for the prefix
	mode readMode
}

// startOf decodes the continue token or takes the read mode.
func (r *Reader) startOf(prefix string, opts storage.GetListOptions) (listStart, int64, error) {
	pos, err := opts.Position(prefix)
	if err != nil {
		return listStart{}, 0, err
	}
	mode, err := modeOf(pos)
	if err != nil {
		return listStart{}, 0, err
	}
	return listStart{key: pos.Start, mode: mode}, mode.exact, nil
}

// read is one store read; it maps a future revision in a continue token
// to ErrInvalidContinue and in a resourceVersion to
// ErrTooLargeResourceVersion.
func (r *Reader) read(ctx context.Context, prefix string, start listStart, rev, limit int64, continued bool) (storage.ListResult, error) {
	res, err := r.store.List(ctx, prefix, storage.ListOptions{Revision: rev, Limit: limit, StartKey: start.key})
	if errors.Is(err, storage.ErrFutureRevision) {
		if continued {
			return res, fmt.Errorf("%w: %w", storage.ErrInvalidContinue, err)
		}
		// The current revision is only for the message ("current: C").
		cur, _ := r.store.CurrentRevision(ctx)
		return res, &storage.TooLargeResourceVersionError{Requested: rev, Current: cur}
	}
	if err != nil {
		return res, err
	}
	if err := checkMinimum(res.Revision, start.mode.minimum); err != nil {
		return res, err
	}
	return res, nil
}

// listAll is a list without a selector: one store read of Limit keys.
func (r *Reader) listAll(ctx context.Context, prefix string, start listStart, rev int64, opts storage.GetListOptions) (storage.ListPage, error) {
	res, err := r.read(ctx, prefix, start, rev, opts.Limit, opts.Continue != "")
	if err != nil {
		return storage.ListPage{}, err
	}
	page := storage.ListPage{Items: res.Items, Revision: res.Revision}
	if !res.More || len(res.Items) == 0 {
		return page, nil
	}
	if page.Continue, err = continueAfter(prefix, res.Items[len(res.Items)-1].Key, res.Revision); err != nil {
		return storage.ListPage{}, err
	}
	if res.Remaining >= 0 {
		n := res.Remaining
		page.RemainingItemCount = &n
	}
	return page, nil
}

// listFiltered reads pages until Limit items match or the range ends.
// The continue token points after the last key examined, matched or
// not, so the next page does not examine it again.
func (r *Reader) listFiltered(ctx context.Context, prefix string, start listStart, rev int64, opts storage.GetListOptions) (storage.ListPage, error) {
	var page storage.ListPage
	size := opts.Limit // 0: read the rest of the range at once
	continued := opts.Continue != ""
	for {
		res, err := r.read(ctx, prefix, start, rev, size, continued)
		if err != nil {
			return storage.ListPage{}, err
		}
		if rev == 0 {
			rev = res.Revision
			// Later reads are at a fixed revision and already checked.
			start.mode.minimum = 0
		}
		page.Revision = rev
		if len(res.Items) == 0 {
			return page, nil
		}
		lastKey, full, err := appendMatching(&page, res.Items, opts)
		if err != nil {
			return storage.ListPage{}, err
		}
		more := res.More || (full && lastKey != res.Items[len(res.Items)-1].Key)
		if !more {
			return page, nil
		}
		if full {
			page.Continue, err = continueAfter(prefix, lastKey, rev)
			return page, err
		}
		start.key = lastKey + "\x00"
		continued = true
		if size < maxPageSize {
			size = min(size*2, maxPageSize)
		}
	}
}

// appendMatching appends the items that match until the page holds
// Limit items, and returns the last key it examined and whether the
// page is full.
func appendMatching(page *storage.ListPage, items []storage.KV, opts storage.GetListOptions) (lastKey string, full bool, err error) {
	for _, kv := range items {
		if opts.Limit > 0 && int64(len(page.Items)) >= opts.Limit {
			return lastKey, true, nil
		}
		lastKey = kv.Key
		ok, err := opts.Predicate.Matches(kv.Value)
		if err != nil {
			return "", false, fmt.Errorf("direct: %s: %w", kv.Key, err)
		}
		if ok {
			page.Items = append(page.Items, kv)
		}
	}
	return lastKey, opts.Limit > 0 && int64(len(page.Items)) >= opts.Limit, nil
}

// continueAfter is the token for a page that continues after key.
func continueAfter(prefix, key string, rev int64) (string, error) {
	return storage.EncodeContinue(prefix, key+"\x00", rev)
}

// ListFrom reads one page under prefix at revision rev (0: the latest),
// starting at startKey ("" for the first key under prefix), with the
// limit and predicate of opts; its Mode, Revision and Continue are
// ignored. It is the read a continue token names, for readers such as the
// watch cache that decode tokens themselves and fall back to storage: the
// page and its continue token are exactly those GetList would give.
func (r *Reader) ListFrom(ctx context.Context, prefix string, rev int64, startKey string, opts storage.GetListOptions) (storage.ListPage, error) {
	start := listStart{key: startKey, mode: readMode{exact: rev}}
	if opts.Predicate.Empty() {
		return r.listAll(ctx, prefix, start, rev, opts)
	}
	return r.listFiltered(ctx, prefix, start, rev, opts)
}
