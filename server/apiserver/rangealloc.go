package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"github.com/listwatch/listwatch/server/storage"
)

// storedRange is a range allocator (node ports) whose allocations live
// in the store under key, as kube-apiserver keeps them in etcd
// (its serviceallocator storage): a bitmap in a v1 RangeAllocation,
// changed by compare-and-swap, so that servers sharing one etcd cluster
// never hand out the same item twice. Reads (Has, Free, ForEach) answer
// from the copy of the last read or write.
type storedRange struct {
	store storage.Interface
	key   string

	mu    sync.Mutex
	alloc *allocator.AllocationBitmap // guarded by mu
	// last is the revision alloc holds; 0: read it again.
	last int64 // guarded by mu
}

// rangeAllocation is the stored form: kube's v1 RangeAllocation.
type rangeAllocation struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   map[string]string `json:"metadata"`
	Range      string            `json:"range"`
	Data       []byte            `json:"data"`
}

func (r *storedRange) encode(rangeSpec string, data []byte) ([]byte, error) {
	return json.Marshal(rangeAllocation{APIVersion: "v1", Kind: "RangeAllocation",
		Metadata: map[string]string{"name": r.key}, Range: rangeSpec, Data: data})
}

func (r *storedRange) decode(value []byte) (rangeAllocation, error) {
	var ra rangeAllocation
	if err := json.Unmarshal(value, &ra); err != nil {
		return ra, fmt.Errorf("apiserver: stored range allocation %s: %w", r.key, err)
	}
	return ra, nil
}

// newStoredRange is a storedRange under key, with the arguments of
// kube's allocator factories (portallocator.New calls its factory once).
func newStoredRange(store storage.Interface, key string, max int, rangeSpec string, offset int) *storedRange {
	return &storedRange{store: store, key: key, alloc: allocator.NewAllocationMapWithOffset(max, rangeSpec, offset)}
}

// lostRace: another server changed, made or deleted the stored bitmap
// between this one's read and write.
func lostRace(err error) bool {
	return errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrNotFound)
}

// storeTimeout bounds each allocation's reads and writes (kube's use no
// request context either).
const storeTimeout = 30 * time.Second

var errUnableToAllocate = errors.New("unable to allocate")

// update reads the stored bitmap (if it changed since last), applies fn
// to it and writes it back if its revision is still the one read,
// retrying from the read when another server got in between. A stored
// bitmap of another range (the flag changed) counts as empty.
func (r *storedRange) update(fn func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rangeSpec, _ := r.alloc.Snapshot()
	for attempt := 0; ; attempt++ {
		kv, err := r.store.Get(ctx, r.key)
		exists := err == nil
		switch {
		case errors.Is(err, storage.ErrNotFound):
			if err := r.alloc.Restore(rangeSpec, nil); err != nil {
				return err
			}
		case err != nil:
			return err
		case kv.Revision != r.last:
			ra, err := r.decode(kv.Value)
			if err != nil {
				return err
			}
			if ra.Range != rangeSpec {
				ra.Data = nil
			}
			if err := r.alloc.Restore(rangeSpec, ra.Data); err != nil {
				return err
			}
		}
		r.last = 0 // until written: fn may change alloc
		if err := fn(); err != nil {
			return err
		}
		_, data := r.alloc.Snapshot()
		value, err := r.encode(rangeSpec, data)
		if err != nil {
			return err
		}
		var rev int64
		if exists {
			rev, err = r.store.Update(ctx, r.key, value, kv.Revision)
		} else {
			rev, err = r.store.Create(ctx, r.key, value)
		}
		if lostRace(err) && attempt < 100 {
			continue
		}
		if err != nil {
			return err
		}
		r.last = rev
		return nil
	}
}

func (r *storedRange) Allocate(item int) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.update(func() error {
		ok, err := r.alloc.Allocate(item)
		if err == nil && !ok {
			err = errUnableToAllocate
		}
		return err
	})
	if errors.Is(err, errUnableToAllocate) {
		return false, nil
	}
	return err == nil, err
}

func (r *storedRange) AllocateNext() (int, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var item int
	err := r.update(func() error {
		var ok bool
		var err error
		item, ok, err = r.alloc.AllocateNext()
		if err == nil && !ok {
			err = errUnableToAllocate
		}
		return err
	})
	if errors.Is(err, errUnableToAllocate) {
		return 0, false, nil
	}
	return item, err == nil, err
}

func (r *storedRange) Release(item int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.update(func() error { return r.alloc.Release(item) })
}

func (r *storedRange) ForEach(fn func(int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alloc.ForEach(fn)
}

func (r *storedRange) Has(item int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alloc.Has(item)
}

func (r *storedRange) Free() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alloc.Free()
}

func (r *storedRange) Destroy() {}

// Get is the stored bitmap as kube's RangeRegistry answers it (for
// kube's node-port repair loop): an empty one with no resourceVersion
// when none is stored.
func (r *storedRange) Get() (*api.RangeAllocation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	kv, err := r.store.Get(ctx, r.key)
	if errors.Is(err, storage.ErrNotFound) {
		return &api.RangeAllocation{}, nil
	}
	if err != nil {
		return nil, err
	}
	ra, err := r.decode(kv.Value)
	if err != nil {
		return nil, err
	}
	return &api.RangeAllocation{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatInt(kv.Revision, 10)},
		Range: ra.Range, Data: ra.Data}, nil
}

// CreateOrUpdate stores snapshot if the stored bitmap is still at its
// resourceVersion (absent for none), else answers kube's Conflict.
func (r *storedRange) CreateOrUpdate(snapshot *api.RangeAllocation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	value, err := r.encode(snapshot.Range, snapshot.Data)
	if err != nil {
		return err
	}
	r.last = 0 // the next change reads what this wrote
	if snapshot.ResourceVersion == "" {
		_, err = r.store.Create(ctx, r.key, value)
	} else {
		rev, perr := strconv.ParseInt(snapshot.ResourceVersion, 10, 64)
		if perr != nil {
			return perr
		}
		_, err = r.store.Update(ctx, r.key, value, rev)
	}
	if lostRace(err) {
		return apierrors.NewConflict(api.Resource("rangeallocations"), "", err)
	}
	return err
}
