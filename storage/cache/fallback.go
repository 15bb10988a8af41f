package cache

import (
	"context"
	"strings"

	"github.com/listwatch/listwatch/storage"
)

// listStore serves a page straight from storage at rev (0: latest), for
// consistent reads the cache cannot answer in time and for revisions older
// than its history. Its pages and continue tokens are the same as the
// cache's at the same revision, so a client may page across the two.
func (c *Cache) listStore(ctx context.Context, prefix string, rev int64, start string, opts storage.GetListOptions) (storage.ListPage, error) {
	if start == "" {
		start = prefix
	}
	p := opts.Predicate
	out := storage.ListPage{}
	var last string
	for {
		res, err := c.cfg.Store.List(ctx, prefix, storage.ListOptions{Revision: rev, Limit: opts.Limit, StartKey: start})
		if err != nil {
			return storage.ListPage{}, err
		}
		rev = res.Revision
		more := res.More
		for i, kv := range res.Items {
			last = kv.Key
			if !c.matchesValue(p, kv.Value) {
				continue
			}
			out.Items = append(out.Items, kv)
			if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
				more = more || i < len(res.Items)-1
				break
			}
		}
		full := opts.Limit > 0 && int64(len(out.Items)) == opts.Limit
		if !more || len(res.Items) == 0 {
			out.Revision = rev
			return out, nil
		}
		if full {
			out.Revision = rev
			if out.Continue, err = storage.EncodeContinue(prefix, last+"\x00", rev); err != nil {
				return storage.ListPage{}, err
			}
			if p.Empty() && res.Remaining >= 0 {
				n := res.Remaining
				out.RemainingItemCount = &n
			}
			return out, nil
		}
		start = last + "\x00"
		if !strings.HasPrefix(start, prefix) {
			out.Revision = rev
			return out, nil
		}
	}
}

// matchesValue tests a value from storage with the cache's attrs.
func (c *Cache) matchesValue(p storage.Predicate, value []byte) bool {
	if p.Empty() {
		return true
	}
	labels, fields, err := c.cfg.Attrs(value)
	return err == nil && p.MatchesAttrs(labels, fields)
}
