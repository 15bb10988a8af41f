package cache

import (
	"context"

	"github.com/listwatch/listwatch/server/storage"
)

// listStore serves a page straight from storage at rev (0: latest), for
// consistent reads the cache cannot answer in time and for revisions older
// than its history. Its pages and continue tokens are the same as the
// cache's at the same revision, so a client may page across the two.
func (c *Cache) listStore(ctx context.Context, prefix string, rev int64, start string, opts storage.GetListOptions) (storage.ListPage, error) {
	// Selectors are evaluated with the cache's own attrs, as in memory.
	opts.Predicate.Attrs = c.cfg.Attrs
	return c.store.ListFrom(ctx, prefix, rev, start, opts)
}
