package server

import (
	"fmt"
	"testing"
)

// BenchmarkCreateConfigMapManagedFields measures creates with and without
// the managedFields bookkeeping, in one run on one server (the "off" case
// is the server before server-side apply; kube has no such switch).
func BenchmarkCreateConfigMapManagedFields(b *testing.B) {
	e := newBenchEnv(b)
	post := func(path, body string) { e.post(b, path, "application/json", "", []byte(body)) }
	post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}`)
	i := 0
	for _, off := range []bool{true, false} {
		b.Run(fmt.Sprintf("managedFields=%v", !off), func(b *testing.B) {
			skipManagedFields = off
			defer func() { skipManagedFields = false }()
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				post("/api/v1/namespaces/bench/configmaps", fmt.Sprintf(
					`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","labels":{"app":"bench"}},"data":{"a":"1","b":"2"}}`, i))
				i++
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
