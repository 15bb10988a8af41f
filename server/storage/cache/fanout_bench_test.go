package cache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// BenchmarkWatchFanout: one etcd transaction updates 100 ConfigMaps of
// ~1 KiB; the op ends when each of 100 cache watchers has read the 100
// events. It covers the cache's whole watch path: etcd's watch stream,
// the cache's apply, and the fan-out to watchers.
//
//	go test -run '^$' -bench WatchFanout -benchtime 20x ./storage/cache/
func BenchmarkWatchFanout(b *testing.B) {
	const watchers, objects = 100, 100
	e := etcdtest.Start(b)
	fill(b, e.Client, objects)
	c := startCache(b, e.Store, Config{})
	waitRev(b, c.Cache, e.Store)
	no := false
	ws := make([]storage.EventStream, watchers)
	for i := range ws {
		ws[i] = openWatch(b, c.Cache, testPrefix, storage.WatchOptions{SendInitialEvents: &no})
	}
	ctx := context.Background()
	pad := strings.Repeat("y", 900)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ops := make([]clientv3.Op, 0, objects)
		for j := range objects {
			name, ns := fmt.Sprintf("cm-%06d", j), fmt.Sprintf("ns-%d", j%10)
			v := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"labels":{"app":"bench"}},"data":{"pad":%q,"i":"%d"}}`, name, ns, pad, i)
			ops = append(ops, clientv3.OpPut(key(ns, name), v))
		}
		if _, err := e.Client.Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Go(func() {
				for range objects {
					if _, err := w.Next(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
