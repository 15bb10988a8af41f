package reliability

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/controllers"
	"github.com/listwatch/listwatch/wire"
)

var crds = client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestSoakCRDChurn creates and deletes CRDs over and over, each one in a
// group of its own and with a few objects, a LIST (which makes its watch
// cache) and a watcher that sees them created, and checks that the
// server's goroutines and live heap stay flat: a deleted CRD's cache,
// etcd watch and goroutines are released with it. (They used to live
// until shutdown: goroutines grew by about three per cycle.) Every
// eighth cycle re-creates a CRD deleted before, which must start empty.
// 150 cycles here; LISTWATCH_LONG=1 runs 3,000.
func TestSoakCRDChurn(t *testing.T) {
	cycles := 150
	if long() {
		cycles = 3000
	}
	// Frequent compaction keeps etcd's own history, in this process's
	// heap, from looking like a leak.
	// Every controller but the garbage collector: it starts its workers
	// and per-resource informers once its first discovery has synced, and
	// stops those of deleted CRDs only at its next discovery (30 s), so
	// its goroutines come and go by tens during the measurement and hide
	// what this test measures, the server's own.
	srv := startServer(t, "", func(o *apiserver.Options) {
		o.Controllers = slices.DeleteFunc(controllers.Names(), func(n string) bool { return n == controllers.GarbageCollector })
	})
	c := newClient(t, adminConfig(t, srv.KubeconfigPath()))
	crdRes := client.NewResource[*object.Unstructured](c, crds)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	cycle := func(i int) {
		group := fmt.Sprintf("c%d.churn.example.com", i)
		if i%8 == 7 {
			group = fmt.Sprintf("c%d.churn.example.com", i-1)
		}
		widgets := client.NewResource[*object.Unstructured](c,
			client.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace("default")
		if _, err := crdRes.Create(ctx, churnCRD(group)); err != nil {
			t.Fatalf("cycle %d: create CRD: %v", i, err)
		}
		l, err := widgets.List(ctx, wire.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatalf("cycle %d: list: %v", i, err)
		}
		if len(l.Items) != 0 {
			t.Fatalf("cycle %d: the re-created CRD has %d objects of its predecessor", i, len(l.Items))
		}
		w, err := widgets.Watch(ctx, wire.ListOptions{ResourceVersion: l.Metadata.ResourceVersion})
		if err != nil {
			t.Fatalf("cycle %d: watch: %v", i, err)
		}
		defer w.Close()
		const objects = 3
		for j := range objects {
			obj := &object.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1", "kind": "Widget",
				"metadata": map[string]any{"name": fmt.Sprintf("w%d", j)},
				"spec":     map[string]any{"n": int64(i)},
			}}
			if _, err := widgets.Create(ctx, obj); err != nil {
				t.Fatalf("cycle %d: create widget: %v", i, err)
			}
		}
		for seen := 0; seen < objects; {
			ev, err := w.Next()
			if err != nil {
				t.Fatalf("cycle %d: watch ended after %d events: %v", i, seen, err)
			}
			if ev.Type == wire.Added {
				seen++
			}
		}
		// The DELETE marks the CRD; kube's finalizer empties it and
		// deletes it a moment later, watched here.
		del, err := crdRes.Delete(ctx, "widgets."+group, wire.DeleteOptions{})
		if err != nil {
			t.Fatalf("cycle %d: delete CRD: %v", i, err)
		}
		cw, err := crdRes.Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=widgets." + group, ResourceVersion: del.Object.GetResourceVersion()})
		if err != nil {
			t.Fatalf("cycle %d: watch CRD: %v", i, err)
		}
		defer cw.Close()
		for {
			ev, err := cw.Next()
			if err != nil {
				t.Fatalf("cycle %d: CRD watch ended before its deletion: %v", i, err)
			}
			if ev.Type == wire.Deleted {
				break
			}
		}
	}

	// Warm up (connections, the CRDs' and the first cache's state), then
	// measure from there.
	for i := range 10 {
		cycle(i)
	}
	g0, h0 := settledRuntime(0)
	start := time.Now()
	for i := range cycles {
		cycle(10 + i)
	}
	elapsed := time.Since(start)
	g1, h1 := settledRuntime(g0 + 20)
	t.Logf("%d CRD cycles in %v: goroutines %d -> %d, heap %.1f MiB -> %.1f MiB",
		cycles, elapsed.Round(time.Millisecond), g0, g1, float64(h0)/(1<<20), float64(h1)/(1<<20))
	if g1 > g0+20 {
		t.Errorf("goroutines grew from %d to %d over %d CRD create/delete cycles", g0, g1, cycles)
	}
	// The embedded etcd runs in this process and keeps its raft log in
	// memory until a snapshot: about 13 KiB per cycle, measured with a
	// heap profile. A leaked cache with its objects and history costs
	// more than the allowance.
	if allowance := uint64(cycles)*20<<10 + 16<<20; h1 > h0+allowance {
		t.Errorf("heap grew from %.1f MiB to %.1f MiB over %d CRD create/delete cycles",
			float64(h0)/(1<<20), float64(h1)/(1<<20), cycles)
	}
}

func churnCRD(group string) *object.Unstructured {
	return &object.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
					// kube accepts a selectable field only if the schema
					// declares it.
					"properties": map[string]any{"spec": map[string]any{
						"type": "object", "x-kubernetes-preserve-unknown-fields": true,
						"properties": map[string]any{"n": map[string]any{"type": "integer"}},
					}},
				}},
				"selectableFields": []any{map[string]any{"jsonPath": ".spec.n"}},
			}},
		},
	}}
}

// settledRuntime returns the goroutine count and live heap after a GC,
// once the goroutine count is at most want (0: no wait) or 5s have
// passed: goroutines of closed connections and watches take a moment to
// exit.
func settledRuntime(want int) (goroutines int, heap uint64) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		goroutines = runtime.NumGoroutine()
		if want == 0 || goroutines <= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling a real condition, with a deadline
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return goroutines, ms.HeapAlloc
}
