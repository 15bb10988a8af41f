package etcd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// BenchmarkRangeRaw reads 500 of 10,000 ~1 KiB values, once straight
// through clientv3 and once through Store.List (which also sets every
// value's resourceVersion), in the same run.
func BenchmarkRangeRaw(b *testing.B) {
	e := etcdtest.Start(b)
	ctx := context.Background()
	const prefix = "/registry/configmaps/bench/"
	pad := strings.Repeat("x", 900)
	var bytes int64
	for i := 0; i < 10000; i++ {
		v := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","namespace":"bench"},"data":{"pad":%q}}`, i, pad)
		if i < 500 {
			bytes += int64(len(v))
		}
		if _, err := e.Client.Put(ctx, fmt.Sprintf("%scm-%05d", prefix, i), v); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("clientv3", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			resp, err := e.Client.Get(ctx, prefix, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(500))
			if err != nil || len(resp.Kvs) != 500 {
				b.Fatal(err, len(resp.Kvs))
			}
		}
	})
	b.Run("Store.List", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			res, err := e.Store.List(ctx, prefix, storage.ListOptions{Limit: 500})
			if err != nil || len(res.Items) != 500 {
				b.Fatal(err, len(res.Items))
			}
		}
	})
}
