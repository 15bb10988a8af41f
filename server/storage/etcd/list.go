package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/server/storage"
)

// List reads one page of the keys under prefix, in key order, from
// opts.StartKey (or the prefix) to the end of the prefix.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (res storage.ListResult, err error) {
	defer s.observe("list", prefix, time.Now(), &err)
	start := prefix
	if opts.StartKey != "" {
		if !strings.HasPrefix(opts.StartKey, prefix) {
			return storage.ListResult{}, fmt.Errorf("%w: %q is not under %q", storage.ErrInvalidStartKey, opts.StartKey, prefix)
		}
		start = opts.StartKey
	}
	end := clientv3.GetPrefixRangeEnd(prefix)
	if prefix == "" {
		start, end = "\x00", "\x00" // the whole keyspace
		if opts.StartKey != "" {
			start = opts.StartKey
		}
	}
	ops := []clientv3.OpOption{clientv3.WithRange(end)}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	resp, err := s.cli.Get(ctx, start, ops...)
	if err != nil {
		return storage.ListResult{}, mapError(err, opts.Revision)
	}
	res = storage.ListResult{
		Items:    make([]storage.KV, 0, len(resp.Kvs)),
		Revision: resp.Header.Revision,
		More:     resp.More,
	}
	if opts.Revision > 0 {
		// The header carries the current revision; the page was read at
		// the one asked for.
		res.Revision = opts.Revision
	}
	for _, kv := range resp.Kvs {
		item, err := toKV(kv, kv.ModRevision)
		if err != nil {
			return storage.ListResult{}, err
		}
		res.Items = append(res.Items, item)
	}
	if res.More {
		// Count covers the whole range from start, not just this page.
		res.Remaining = resp.Count - int64(len(resp.Kvs))
	}
	return res, nil
}
