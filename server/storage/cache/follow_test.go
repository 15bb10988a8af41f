package cache

import (
	"fmt"
	"slices"
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// TestFollowWithoutPrevValues: the cache keeps its own previous state, so
// its etcd watch does not ask etcd for previous values, and its watchers
// still get the last object in a DELETED event and a DELETED when an
// object stops matching their selector.
func TestFollowWithoutPrevValues(t *testing.T) {
	e := etcdtest.Start(t)
	spy := e.SpyWatches()
	c := startCache(t, e.Store, Config{})
	ra := mustCreate(t, e.Store, "ns", "a", map[string]string{"app": "x"})
	mustCreate(t, e.Store, "ns", "b", map[string]string{"app": "x"})
	waitRev(t, c.Cache, e.Store)

	w := openWatch(t, c.Cache, testPrefix, storage.WatchOptions{Mode: storage.ReadExact, Revision: ra + 1, Predicate: labelPred(t, "app=x")})
	out := mustUpdate(t, e.Store, "ns", "a", map[string]string{"app": "y"})
	del := mustDelete(t, e.Store, "ns", "b")
	want := []string{
		fmt.Sprintf("DELETED %sns/a@%d[app]", testPrefix, out),
		fmt.Sprintf("DELETED %sns/b@%d[app]", testPrefix, del),
	}
	if got := describe(t, nextN(t, w, 2)); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}

	reqs := spy.Requests()
	if len(reqs) == 0 {
		t.Fatal("no etcd watch recorded")
	}
	for _, r := range reqs {
		if r.PrevKV {
			t.Errorf("etcd watch of %q asks for previous values", r.Key)
		}
	}
}
