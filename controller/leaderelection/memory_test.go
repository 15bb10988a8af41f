package leaderelection

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/listwatch/listwatch/wire"
)

// memoryLeases is an in-memory LeaseClient with the API server's
// optimistic concurrency: a peer stand-in for unit tests. Objects go
// through JSON so callers never share memory with the store.
type memoryLeases struct {
	mu     sync.Mutex
	rv     int
	leases map[string][]byte
	// failUpdates, while positive, makes Update fail with Conflict (and
	// counts down); failAll makes every call fail.
	failUpdates int
	failAll     bool
	updates     int
}

var leasesGR = wire.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func newMemoryLeases() *memoryLeases { return &memoryLeases{leases: map[string][]byte{}} }

func (m *memoryLeases) Get(_ context.Context, name string) (*Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAll {
		return nil, wire.NewServiceUnavailable("store down")
	}
	b, ok := m.leases[name]
	if !ok {
		return nil, wire.NewNotFound(leasesGR, name)
	}
	return decode(b), nil
}

func (m *memoryLeases) Create(_ context.Context, l *Lease) (*Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAll {
		return nil, wire.NewServiceUnavailable("store down")
	}
	if _, ok := m.leases[l.Metadata.Name]; ok {
		return nil, wire.NewAlreadyExists(leasesGR, l.Metadata.Name)
	}
	return m.storeLocked(l), nil
}

func (m *memoryLeases) Update(_ context.Context, l *Lease) (*Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAll {
		return nil, wire.NewServiceUnavailable("store down")
	}
	b, ok := m.leases[l.Metadata.Name]
	if !ok {
		return nil, wire.NewNotFound(leasesGR, l.Metadata.Name)
	}
	if m.failUpdates > 0 {
		m.failUpdates--
		// A concurrent writer: bump the stored RV so the caller's is stale.
		m.storeLocked(decode(b))
		return nil, wire.NewConflict(leasesGR, l.Metadata.Name, wire.ConflictModified)
	}
	if decode(b).Metadata.ResourceVersion != l.Metadata.ResourceVersion {
		return nil, wire.NewConflict(leasesGR, l.Metadata.Name, wire.ConflictModified)
	}
	m.updates++
	return m.storeLocked(l), nil
}

func (m *memoryLeases) storeLocked(l *Lease) *Lease {
	m.rv++
	c := decode(encode(l))
	c.Metadata.ResourceVersion = strconv.Itoa(m.rv)
	m.leases[c.Metadata.Name] = encode(c)
	return decode(m.leases[c.Metadata.Name])
}

func (m *memoryLeases) holder(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.leases[name]
	if !ok {
		return ""
	}
	return decode(b).Spec.HolderIdentity
}

func (m *memoryLeases) set(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

func encode(l *Lease) []byte {
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	return b
}

func decode(b []byte) *Lease {
	var l Lease
	if err := json.Unmarshal(b, &l); err != nil {
		panic(err)
	}
	return &l
}

var _ LeaseClient = (*memoryLeases)(nil)
