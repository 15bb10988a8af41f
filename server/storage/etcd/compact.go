package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Compact discards the history before rev. Compacting to a revision that
// is already compacted is not an error.
func (s *Store) Compact(ctx context.Context, rev int64) (err error) {
	defer s.observe("compact", "", time.Now(), &err)
	_, err = s.cli.Compact(ctx, rev)
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return mapError(err, rev)
	}
	// Compacted now, or already compacted at least this far.
	s.sawCompaction(rev)
	return nil
}

// CompactRevision is the newest revision this Store has compacted etcd
// to, or has seen a watch report compacted; 0 if none. Another server's
// compaction is learnt only when a watch of this Store runs into it.
func (s *Store) CompactRevision() int64 { return s.compacted.Load() }

// sawCompaction records that etcd's history before rev is gone.
func (s *Store) sawCompaction(rev int64) {
	for {
		cur := s.compacted.Load()
		if rev <= cur || s.compacted.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// compactRevKey is the key whose version is the servers' shared logical
// clock for compaction, and whose value is the last revision compacted
// to. kube-apiserver uses the same key, so a mixed fleet cooperates.
const compactRevKey = "compact_rev_key"

// Compactor compacts etcd's history periodically. Several servers
// sharing one etcd each run one; in every interval only one of them
// compacts.
//
// The servers agree through compactRevKey: its version counts
// compaction rounds. Each tick, a Compactor tries to bump the version
// from the value it last saw, in a txn; the winner compacts to the
// revision it read at its previous tick, so history at least one
// interval old survives. A loser learns the current version and
// revision, and competes again next tick.
type Compactor struct {
	Store *Store
	// Interval between rounds; default 5 minutes, as kube-apiserver.
	Interval time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger

	// version is compactRevKey's version at this Compactor's last tick,
	// rev the store's revision then. Only Run's goroutine touches them.
	version int64
	rev     int64
}

// Run compacts every Interval until ctx ends, then returns ctx's error.
// Failed rounds are logged and retried at the next tick.
func (c *Compactor) Run(ctx context.Context) error {
	interval := c.Interval
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if _, err := c.tick(ctx); err != nil && ctx.Err() == nil {
			c.logger().Warn("etcd compaction failed", "revision", c.rev, "err", err)
		}
	}
}

func (c *Compactor) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// tick runs one round and reports the revision it compacted to, 0 if it
// did not compact.
func (c *Compactor) tick(ctx context.Context) (compacted int64, err error) {
	cli := c.Store.cli
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", c.version)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(c.rev, 10))).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd: compaction round: %w", err)
	}
	prevRev := c.rev
	c.rev = resp.Header.Revision
	if !resp.Succeeded {
		// Another server won this round; adopt its clock.
		c.version = 0 // the key is gone: start the clock again
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			c.version = kvs[0].Version
		}
		return 0, nil
	}
	c.version++
	if prevRev == 0 {
		// The first round only starts the clock: there is no revision
		// from an interval ago yet.
		return 0, nil
	}
	if err := c.Store.Compact(ctx, prevRev); err != nil {
		return 0, err
	}
	c.logger().Info("etcd compacted", "revision", prevRev)
	return prevRev, nil
}
