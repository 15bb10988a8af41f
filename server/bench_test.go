package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkListConfigMaps lists 10,000 ConfigMaps of ~1 KiB through the
// HTTP handler (a 500-item page and the full list) and, in the same run,
// reads the same ranges straight from etcd with clientv3, the floor the
// handler is measured against.
func BenchmarkListConfigMaps(b *testing.B) {
	const n = 10000
	e := newBenchEnv(b)
	payload := strings.Repeat("x", 900)
	ctx := context.Background()
	for i := 0; i < n; i++ {
		v := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","namespace":"default","uid":"u","creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"k":%q}}`, i, payload)
		if _, err := e.store.Create(ctx, fmt.Sprintf("/registry/configmaps/default/cm-%05d", i), []byte(v)); err != nil {
			b.Fatal(err)
		}
	}
	httpList := func(b *testing.B, query string) {
		b.ReportAllocs()
		var bytes int64
		for b.Loop() {
			resp, err := http.Get(e.url + cmPath + query)
			if err != nil {
				b.Fatal(err)
			}
			m, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("%d %v", resp.StatusCode, err)
			}
			bytes = m
		}
		b.SetBytes(bytes)
	}
	etcdList := func(b *testing.B, limit int64) {
		b.ReportAllocs()
		var bytes int64
		for b.Loop() {
			resp, err := e.etcdClient.Get(ctx, "/registry/configmaps/default/", clientv3.WithPrefix(), clientv3.WithLimit(limit))
			if err != nil {
				b.Fatal(err)
			}
			bytes = 0
			for _, kv := range resp.Kvs {
				bytes += int64(len(kv.Value))
			}
		}
		b.SetBytes(bytes)
	}
	b.Run("http/page500", func(b *testing.B) { httpList(b, "?limit=500") })
	b.Run("etcd/page500", func(b *testing.B) { etcdList(b, 500) })
	b.Run("http/all", func(b *testing.B) { httpList(b, "") })
	b.Run("etcd/all", func(b *testing.B) { etcdList(b, 0) })
}
