package cache

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// TestHistoryAge: events older than HistoryAge leave the history, so a
// watch from before them is 410, while the latest state stays listable.
func TestHistoryAge(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{HistoryAge: 1, HistoryMin: 1}) // 1ns: only the newest event survives a write
	r1 := mustCreate(t, e.Store, "ns", "a", nil)
	r2 := mustCreate(t, e.Store, "ns", "b", nil)
	mustCreate(t, e.Store, "ns", "c", nil)
	waitRev(t, c.Cache, e.Store)
	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: r1})
	var ce *storage.CompactedError
	if _, err := w.Next(context.Background()); !errors.As(err, &ce) || ce.Compacted != r2 {
		t.Fatalf("watch from an aged-out revision: %v, want 410 with history from %d", err, r2)
	}
	w2 := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: r2})
	if ev := nextN(t, w2, 1)[0]; !strings.HasSuffix(string(metaOf(t, ev.Object).Key), "/c") {
		t.Fatalf("watch from %d: %s", r2, ev.Object)
	}
}

// TestHistoryKeepsItsNewest: the newest HistoryMin events stay whatever
// their age, as kube's watch cache keeps its lower bound, so a watch from
// a revision among them resumes (it was 410 once HistoryAge had passed,
// and a quiet resource's informers relisted).
func TestHistoryKeepsItsNewest(t *testing.T) {
	e := etcdtest.Start(t)
	c := startCache(t, e.Store, Config{HistoryAge: 1, HistoryMin: 3}) // 1ns: every event is old
	mustCreate(t, e.Store, "ns", "a", nil)
	r1 := mustCreate(t, e.Store, "ns", "b", nil)
	mustCreate(t, e.Store, "ns", "c", nil)
	mustCreate(t, e.Store, "ns", "d", nil)
	waitRev(t, c.Cache, e.Store)
	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: r1})
	for i, ev := range nextN(t, w, 2) {
		if want := []string{"/c", "/d"}[i]; !strings.HasSuffix(string(metaOf(t, ev.Object).Key), want) {
			t.Fatalf("event %d from %d: %s, want %s", i, r1, ev.Object, want)
		}
	}
	// a's event left: the history covers the changes after it.
	w0 := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: r1 - 2})
	var ce *storage.CompactedError
	if _, err := w0.Next(context.Background()); !errors.As(err, &ce) || ce.Compacted != r1-1 {
		t.Fatalf("watch from before a: %v, want 410 with history from %d", err, r1-1)
	}
}

// TestMetricsShared: caches of several resources share one registry, and
// a stopped cache's series go away.
func TestMetricsShared(t *testing.T) {
	e := etcdtest.Start(t)
	reg := prometheus.NewRegistry()
	startCache(t, e.Store, Config{Registerer: reg, Resource: "configmaps"})
	ctx, cancel := context.WithCancel(context.Background())
	other := New(Config{Store: e.Store, Prefix: "/registry/secrets/", Registerer: reg, Resource: "secrets"})
	done := make(chan error)
	go func() { done <- other.Run(ctx) }()
	if err := other.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := seriesOf(t, reg, "watch_cache_resource_version"); n != 2 {
		t.Fatalf("%d resource_version series, want 2", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := seriesOf(t, reg, "watch_cache_resource_version"); n != 1 {
		t.Fatalf("%d resource_version series after stop, want 1", n)
	}
	if other.Ready() {
		t.Fatal("stopped cache is ready")
	}
}

func seriesOf(t testing.TB, g prometheus.Gatherer, name string) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}
