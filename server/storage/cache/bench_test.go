package cache

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// Benchmarks over 100k ConfigMaps of ~1 KiB. The setup (etcd filled in
// batched transactions, cache listed) takes about half a minute and runs
// once per BenchmarkCache100k; -benchtime sets the iterations:
//
//	go test -run '^$' -bench Cache100k -benchtime 200x ./storage/cache/
//
// Each sub-benchmark pair runs the cache and etcd in the same run; compare
// their ns/op for the ratio.
func BenchmarkCache100k(b *testing.B) {
	const n = 100_000
	e := etcdtest.Start(b)
	fill(b, e.Client, n)
	c := startCache(b, e.Store, Config{})
	if got := c.snap.Len(); got != n {
		b.Fatalf("cache holds %d objects", got)
	}
	ctx := context.Background()

	b.Run("page500/cache", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			page, err := c.GetList(ctx, testPrefix, storage.GetListOptions{Mode: storage.ReadAny, Limit: 500})
			if err != nil || len(page.Items) != 500 {
				b.Fatal(err, len(page.Items))
			}
		}
	})
	b.Run("page500/cache-consistent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			page, err := c.GetList(ctx, testPrefix, storage.GetListOptions{Limit: 500})
			if err != nil || len(page.Items) != 500 {
				b.Fatal(err, len(page.Items))
			}
		}
	})
	b.Run("page500/etcd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := e.Store.List(ctx, testPrefix, storage.ListOptions{Limit: 500})
			if err != nil || len(res.Items) != 500 {
				b.Fatal(err, len(res.Items))
			}
		}
	})
	b.Run("full/cache", func(b *testing.B) {
		streamBench(b, func() (storage.ListPage, error) {
			return c.GetList(ctx, testPrefix, storage.GetListOptions{Mode: storage.ReadAny})
		})
	})
	b.Run("full/etcd", func(b *testing.B) {
		streamBench(b, func() (storage.ListPage, error) {
			res, err := e.Store.List(ctx, testPrefix, storage.ListOptions{})
			return storage.ListPage{Items: res.Items, Revision: res.Revision}, err
		})
	})
}

// streamBench lists with list and writes the response the way the server
// streams a LIST (envelope, then the items' bytes as they are), reporting
// MB/s and heap-MB/op: every byte one LIST allocates, which bounds how much
// it can grow the heap. (Sampling HeapAlloc would mostly measure GC slack:
// with 100k objects live the collector lets garbage reach that size again.)
func streamBench(b *testing.B, list func() (storage.ListPage, error)) {
	w := bufio.NewWriterSize(io.Discard, 32<<10)
	var size int64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	for b.Loop() {
		page, err := list()
		if err != nil {
			b.Fatal(err)
		}
		size = writeList(w, page)
	}
	runtime.ReadMemStats(&after)
	b.SetBytes(size)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "heap-MB/op")
}

func writeList(w *bufio.Writer, page storage.ListPage) int64 {
	var n int
	m, _ := w.WriteString(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"`)
	n += m
	m, _ = w.WriteString(strconv.FormatInt(page.Revision, 10))
	n += m
	m, _ = w.WriteString(`"},"items":[`)
	n += m
	for i, kv := range page.Items {
		if i > 0 {
			w.WriteByte(',')
			n++
		}
		m, _ = w.Write(kv.Value)
		n += m
	}
	m, _ = w.WriteString("]}\n")
	n += m
	w.Flush()
	return int64(n)
}

// fill writes n ConfigMaps of ~1 KiB straight through the etcd client in
// batched transactions, as the store would (values without RV).
func fill(b testing.TB, cli *clientv3.Client, n int) {
	b.Helper()
	pad := strings.Repeat("x", 900)
	const batch = 100
	ctx := context.Background()
	for i := 0; i < n; i += batch {
		ops := make([]clientv3.Op, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			name := fmt.Sprintf("cm-%06d", j)
			ns := fmt.Sprintf("ns-%d", j%10)
			v := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"labels":{"app":"bench","shard":"%d"}},"data":{"pad":%q}}`, name, ns, j%7, pad)
			ops = append(ops, clientv3.OpPut(key(ns, name), v))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
