package cache

import (
	"testing"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

func TestSmoke(t *testing.T) {
	e := etcdtest.Start(t)
	mustCreate(t, e.Store, "a", "x", nil)
	c := startCache(t, e.Store, Config{})
	mustCreate(t, e.Store, "a", "y", map[string]string{"k": "v"})
	items, rev, err := listAll(t, c, testPrefix, storage.GetListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameKVs(items, oracleList(t, e.Store, testPrefix, rev, storage.Predicate{})); err != nil {
		t.Fatal(err)
	}
}
