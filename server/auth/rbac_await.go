package auth

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// writes wakes the callers of AwaitWrite when an informer changes: changed
// is closed (and replaced) by each event, after the informer's indexer
// holds it.
type writes struct {
	mu       sync.Mutex
	changed  chan struct{}
	timeouts atomic.Int64
	// onWait, set by tests, is called when AwaitWrite starts to wait for
	// an event.
	onWait func()
}

// wakeChannel is the channel the next event closes.
func (w *writes) wakeChannel() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

func (w *writes) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// handler wakes the waiters on every event of an informer; client-go
// calls it once the informer's indexer reflects the event.
func (w *writes) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.wake() },
		UpdateFunc: func(any, any) { w.wake() },
		DeleteFunc: func(any) { w.wake() },
	}
}

// AwaitWrite waits, up to timeout, until the informers reflect a write
// committed to the object name (in namespace, "" for a cluster-scoped
// one) of resource in group at revision rev: they hold it at a
// resourceVersion of at least rev, or, if the write removed it (gone),
// they hold it no more (or hold a newer object of the name). It reports
// false when it gave up (timeout, ctx), true otherwise. A write to
// anything but Roles, RoleBindings, ClusterRoles and ClusterRoleBindings
// returns at once, and so does any write before the informers have
// synced: the bootstrap policy is written before they start.
//
// kube-apiserver's authorizer follows its informers too, without
// waiting: a binding may not be in effect yet when its create's answer
// arrives. Here it is.
func (r *RBAC) AwaitWrite(ctx context.Context, group, resource, namespace, name string, rev int64, gone bool, timeout time.Duration) bool {
	if group != rbacv1.GroupName {
		return true
	}
	idx := r.indexers[resource]
	if idx == nil || !r.HasSynced() {
		return true
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	reflected := func() bool {
		obj, exists, err := idx.GetByKey(key)
		if err != nil {
			return false
		}
		if !exists {
			return gone
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return false
		}
		have, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
		if err != nil {
			return false
		}
		if gone {
			return have > rev // created again since
		}
		return have >= rev
	}
	var deadline <-chan time.Time
	for {
		wake := r.writes.wakeChannel() // before the check: no event is missed
		if reflected() {
			return true
		}
		if deadline == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
			if r.writes.onWait != nil {
				r.writes.onWait()
			}
		}
		select {
		case <-wake:
		case <-deadline:
			r.writes.timeouts.Add(1)
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// AwaitTimeouts is how many times AwaitWrite gave up at its timeout.
func (r *RBAC) AwaitTimeouts() int64 { return r.writes.timeouts.Load() }
