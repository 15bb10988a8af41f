package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
	"github.com/listwatch/listwatch/wire"
)

// TestListModes: every resourceVersion mode × limit × selector × prefix
// gives, over all its pages, what etcd holds at the list's revision.
func TestListModes(t *testing.T) {
	e := etcdtest.Start(t)
	for i := range 6 {
		mustCreate(t, e.Store, fmt.Sprintf("ns%d", i%2), fmt.Sprintf("o%d", i), map[string]string{"app": fmt.Sprint("ab"[i%2 : i%2+1])})
	}
	c := startCache(t, e.Store, Config{})
	r1 := mustUpdate(t, e.Store, "ns0", "o0", map[string]string{"app": "b"})
	mustDelete(t, e.Store, "ns1", "o1")
	mustCreate(t, e.Store, "ns1", "o9", map[string]string{"app": "a"})
	mustUpdate(t, e.Store, "ns0", "o2", nil)

	field, err := object.ParseFieldSelector("metadata.namespace=ns1")
	if err != nil {
		t.Fatal(err)
	}
	preds := map[string]storage.Predicate{
		"none": {}, "app=a": labelPred(t, "app=a"), "app!=a": labelPred(t, "app!=a"), "ns=ns1": {Field: field},
	}
	r1s := strconv.FormatInt(r1, 10)
	type mode struct {
		rv, match string
		exact     bool // the list must be at r1 exactly
		atLeast   bool // the list must be at r1 or later
	}
	modes := map[string]mode{
		"consistent":   {},
		"any":          {rv: "0"},
		"notOlderThan": {rv: r1s, match: wire.MatchNotOlderThan, atLeast: true},
		"exact":        {rv: r1s, match: wire.MatchExact, exact: true},
		"legacy":       {rv: r1s, atLeast: true},
	}
	for mname, m := range modes {
		for _, limit := range []int64{0, 1, 2, 100} {
			for pname, p := range preds {
				for _, prefix := range []string{testPrefix, testPrefix + "ns1/"} {
					t.Run(fmt.Sprintf("%s/limit=%d/%s/%s", mname, limit, pname, prefix), func(t *testing.T) {
						cur, err := e.Store.CurrentRevision(context.Background())
						if err != nil {
							t.Fatal(err)
						}
						items, rev, err := listAll(t, c, prefix, listOpts(t, m.rv, m.match, limit, p))
						if err != nil {
							t.Fatal(err)
						}
						legacyExact := m.rv == r1s && m.match == "" && limit > 0
						switch {
						case (m.exact || legacyExact) && rev != r1:
							t.Fatalf("revision %d, want exactly %d", rev, r1)
						case m.atLeast && rev < r1:
							t.Fatalf("revision %d, want >= %d", rev, r1)
						case m.rv == "" && rev < cur:
							t.Fatalf("consistent read at %d, etcd was at %d", rev, cur)
						}
						if err := sameKVs(items, oracleList(t, e.Store, prefix, rev, p)); err != nil {
							t.Fatal(err)
						}
					})
				}
			}
		}
	}
}

// TestListRemainingCount: remainingItemCount counts down and is absent on
// the last page and with a selector.
func TestListRemainingCount(t *testing.T) {
	e := etcdtest.Start(t)
	for i := range 5 {
		mustCreate(t, e.Store, "ns", fmt.Sprintf("o%d", i), map[string]string{"a": "b"})
	}
	c := startCache(t, e.Store, Config{})
	var got []string
	opts := storage.GetListOptions{Mode: storage.ReadAny, Limit: 2}
	for {
		page, err := c.GetList(context.Background(), testPrefix, opts)
		if err != nil {
			t.Fatal(err)
		}
		if page.RemainingItemCount == nil {
			got = append(got, "nil")
		} else {
			got = append(got, fmt.Sprint(*page.RemainingItemCount))
		}
		if page.Continue == "" {
			break
		}
		opts = storage.GetListOptions{Continue: page.Continue, Limit: 2}
	}
	if fmt.Sprint(got) != "[3 1 nil]" {
		t.Fatalf("remainingItemCount %v, want [3 1 nil]", got)
	}
	page, err := c.GetList(context.Background(), testPrefix, storage.GetListOptions{Limit: 2, Predicate: labelPred(t, "a=b")})
	if err != nil {
		t.Fatal(err)
	}
	if page.RemainingItemCount != nil || page.Continue == "" {
		t.Fatalf("with a selector: remaining %v continue %q", page.RemainingItemCount, page.Continue)
	}
}

// TestListExactOutsideHistory: an Exact read older than the history comes
// from etcd while etcd has it, and is 410 once etcd compacted it, as is
// one the history holds.
func TestListExactOutsideHistory(t *testing.T) {
	e := etcdtest.Start(t)
	old := mustCreate(t, e.Store, "ns", "a", nil)
	c := startCache(t, e.Store, Config{HistorySize: 2})
	for i := range 4 {
		mustCreate(t, e.Store, "ns", fmt.Sprintf("b%d", i), nil)
	}
	waitRev(t, c.Cache, e.Store)
	// old is the list revision; the ring of 2 no longer reaches it.
	items, rev, err := listAll(t, c, testPrefix, storage.GetListOptions{Mode: storage.ReadExact, Revision: old, Limit: 1})
	if err != nil || rev != old {
		t.Fatalf("exact read from etcd: rev %d err %v", rev, err)
	}
	if err := sameKVs(items, oracleList(t, e.Store, testPrefix, old, storage.Predicate{})); err != nil {
		t.Fatal(err)
	}
	cur, _ := e.Store.CurrentRevision(context.Background())
	if err := e.Store.Compact(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetList(context.Background(), testPrefix, storage.GetListOptions{Mode: storage.ReadExact, Revision: old})
	var ce *storage.CompactedError
	if !errors.As(err, &ce) {
		t.Fatalf("exact read of a compacted revision: %v, want *CompactedError", err)
	}
	// A revision the ring still holds, but etcd compacted, is 410 too, as
	// from kube's cacher, which drops its snapshots older than etcd's
	// compaction; the compacted revision itself is still served.
	_, err = c.GetList(context.Background(), testPrefix, storage.GetListOptions{Mode: storage.ReadExact, Revision: cur - 1})
	if !errors.As(err, &ce) {
		t.Fatalf("exact read in history of a compacted revision: %v, want *CompactedError", err)
	}
	page, err := c.GetList(context.Background(), testPrefix, storage.GetListOptions{Mode: storage.ReadExact, Revision: cur})
	if err != nil || page.Revision != cur || len(page.Items) != 5 {
		t.Fatalf("exact read at the compaction: %d items at %d, err %v", len(page.Items), page.Revision, err)
	}
}

// TestListErrors: future revisions time out; bad tokens are rejected.
func TestListErrors(t *testing.T) {
	e := etcdtest.Start(t)
	mustCreate(t, e.Store, "ns", "a", nil)
	mustCreate(t, e.Store, "ns", "b", nil)
	c := startCache(t, e.Store, Config{FreshnessTimeout: 100 * time.Millisecond})
	for _, match := range []string{wire.MatchNotOlderThan, wire.MatchExact} {
		_, err := c.GetList(context.Background(), testPrefix, listOpts(t, "100000", match, 0, storage.Predicate{}))
		if !errors.Is(err, storage.ErrTooLargeResourceVersion) {
			t.Errorf("%s future revision: %v", match, err)
		}
	}
	page, err := c.GetList(context.Background(), testPrefix, storage.GetListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: %v %q", err, page.Continue)
	}
	// As kube's, a token continues a list of another prefix, from its
	// start key under that prefix.
	if _, err := c.GetList(context.Background(), testPrefix+"ns/", storage.GetListOptions{Continue: page.Continue}); err != nil {
		t.Errorf("token on another prefix: %v", err)
	}
	for _, tc := range []struct{ prefix, token string }{
		{testPrefix, "garbage"},
		{testPrefix, page.Continue[:len(page.Continue)-2]},
	} {
		_, err := c.GetList(context.Background(), tc.prefix, storage.GetListOptions{Continue: tc.token})
		if !errors.Is(err, storage.ErrInvalidContinue) {
			t.Errorf("token %q on %s: %v", tc.token, tc.prefix, err)
		}
	}
	if _, err := c.GetList(context.Background(), "/registry/secrets/", storage.GetListOptions{}); !errors.Is(err, ErrOutsidePrefix) {
		t.Errorf("outside prefix: %v", err)
	}
}

// waitRev waits until the cache has seen etcd's current revision.
func waitRev(t testing.TB, c *Cache, s storage.Interface) int64 {
	t.Helper()
	cur, err := s.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !c.waitFor(testCtx(t), cur, 20*time.Second, nil) {
		t.Fatalf("cache did not reach revision %d", cur)
	}
	return cur
}

// listOpts is the LIST with these parameters, through the server's parse.
func listOpts(t testing.TB, rv, match string, limit int64, p storage.Predicate) storage.GetListOptions {
	t.Helper()
	s, err := storage.SpecOf(wire.ListOptions{ResourceVersion: rv, ResourceVersionMatch: match, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return s.ListOptions(p)
}
