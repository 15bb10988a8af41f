package apiserver

import (
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"github.com/listwatch/listwatch/server/storage/etcdtest"
)

// TestStoredRangeSharedByServers: two allocators over one stored bitmap
// (two servers on one etcd) never hand out an item twice, even at once;
// a release through one frees it for the other; a bitmap stored for
// another range counts as empty; and the RangeRegistry side refuses a
// stale snapshot with kube's Conflict.
func TestStoredRangeSharedByServers(t *testing.T) {
	et := etcdtest.Start(t)
	const size = 40
	newRange := func(spec string) *storedRange { return newStoredRange(et.Store, nodePortsKey, size, spec, 0) }
	a, b := newRange("30000-30039"), newRange("30000-30039")
	got := make(chan int, 2*size) // room for a broken allocator that gives every item twice
	var wg sync.WaitGroup
	for _, r := range []*storedRange{a, b} {
		wg.Go(func() {
			for {
				item, ok, err := r.AllocateNext()
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				got <- item
			}
		})
	}
	wg.Wait()
	close(got)
	seen := map[int]bool{}
	for item := range got {
		if seen[item] {
			t.Fatalf("item %d given twice", item)
		}
		seen[item] = true
	}
	if len(seen) != size {
		t.Fatalf("%d items given, want %d", len(seen), size)
	}
	if ok, err := a.Allocate(7); ok || err != nil {
		t.Fatalf("a taken item: %v %v", ok, err)
	}
	if err := b.Release(7); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Allocate(7); !ok || err != nil {
		t.Fatalf("an item released by the other: %v %v", ok, err)
	}

	// Kube's repair loop side: a snapshot at an old resourceVersion is a
	// Conflict; at the current one it is stored.
	snap, err := a.Get()
	if err != nil || snap.Range != "30000-30039" || snap.ResourceVersion == "" {
		t.Fatalf("Get: %+v %v", snap, err)
	}
	if err := b.Release(8); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateOrUpdate(snap); !apierrors.IsConflict(err) {
		t.Fatalf("stale snapshot: %v", err)
	}
	snap, _ = a.Get()
	mem := allocator.NewAllocationMapWithOffset(size, "30000-30039", 0)
	if _, err := mem.Allocate(3); err != nil {
		t.Fatal(err)
	}
	snap.Range, snap.Data = mem.Snapshot()
	if err := a.CreateOrUpdate(snap); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.Allocate(3); ok {
		t.Fatal("item 3 of the stored snapshot given again")
	}
	if ok, _ := b.Allocate(4); !ok {
		t.Fatal("item 4, free in the stored snapshot, not given")
	}

	// Another range (the flag changed): what is stored counts as empty.
	c := newRange("31000-31039")
	if ok, err := c.Allocate(3); !ok || err != nil {
		t.Fatalf("other range: %v %v", ok, err)
	}
}
