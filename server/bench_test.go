package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// BenchmarkCreateConfigMap creates small ConfigMaps through the HTTP
// handler, one at a time. cpu-µs/op is the whole process's CPU time per
// create (handler, client and the embedded etcd together), the figure to
// compare before and after a change to the write path.
func BenchmarkCreateConfigMap(b *testing.B) {
	e := newBenchEnv(b)
	post := func(path, body string) { e.post(b, path, "application/json", "", []byte(body)) }
	post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}`)
	b.ReportAllocs()
	start := cpuTime()
	i := 0
	for b.Loop() {
		post("/api/v1/namespaces/bench/configmaps", fmt.Sprintf(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","labels":{"app":"bench"}},"data":{"a":"1","b":"2"}}`, i))
		i++
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkCreateConfigMapProtobuf is BenchmarkCreateConfigMap as
// client-go's typed clients send it: a protobuf body, protobuf asked for
// first in Accept.
func BenchmarkCreateConfigMapProtobuf(b *testing.B) {
	e := newBenchEnv(b)
	post := func(path, contentType string, body []byte) {
		e.post(b, path, contentType, contentProtobuf+", application/json", body)
	}
	post("/api/v1/namespaces", "application/json", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}`))
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Data:       map[string]string{"a": "1", "b": "2"}}
	var body bytes.Buffer
	b.ReportAllocs()
	start := cpuTime()
	i := 0
	for b.Loop() {
		cm.Name = fmt.Sprintf("cm-%d", i)
		body.Reset()
		if err := protobufCodec.Encode(cm, &body); err != nil {
			b.Fatal(err)
		}
		post("/api/v1/namespaces/bench/configmaps", contentProtobuf, body.Bytes())
		i++
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// post sends a create to the bench server and requires 201; accept is
// the Accept header ("" for none).
func (e *benchEnv) post(b *testing.B, path, contentType, accept string, body []byte) {
	req, err := http.NewRequest(http.MethodPost, e.url+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("POST %s: %d", path, resp.StatusCode)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkUpdateConfigMap replaces one ConfigMap's data through the
// HTTP handler, one update at a time, without a resourceVersion (an
// unconditional update, as kubectl replace --force-free and most
// controllers' retry loops end up sending). cpu-µs/op is as in
// BenchmarkCreateConfigMap.
func BenchmarkUpdateConfigMap(b *testing.B) {
	e := newBenchEnv(b)
	do := func(method, path, body string, want int) {
		req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
	}
	do(http.MethodPost, "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}`, http.StatusCreated)
	do(http.MethodPost, "/api/v1/namespaces/bench/configmaps",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"app":"bench"}},"data":{"a":"0"}}`, http.StatusCreated)
	b.ReportAllocs()
	start := cpuTime()
	i := 0
	for b.Loop() {
		i++
		do(http.MethodPut, "/api/v1/namespaces/bench/configmaps/cm", fmt.Sprintf(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"app":"bench"}},"data":{"a":"%d"}}`, i), http.StatusOK)
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}
