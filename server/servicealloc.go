package server

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
)

// ServiceAllocator is what kube-apiserver's Service REST storage does
// around its strategy: allocate cluster IPs and node ports
// (k8s.io/kubernetes/pkg/registry/core/service/storage's BeginCreate,
// BeginUpdate and AfterDelete hooks). Objects are the internal
// *core.Service. The apiserver package implements it with those hooks.
type ServiceAllocator interface {
	// BeginCreate allocates for a new Service before its strategy runs;
	// the returned FinishFunc commits (true) or reverts (false) that.
	BeginCreate(ctx context.Context, svc runtime.Object, opts *metav1.CreateOptions) (genericregistry.FinishFunc, error)
	// BeginUpdate allocates and releases what an update changes.
	BeginUpdate(ctx context.Context, svc, old runtime.Object, opts *metav1.UpdateOptions) (genericregistry.FinishFunc, error)
	// AfterDelete releases what a deleted Service held.
	AfterDelete(svc runtime.Object, opts *metav1.DeleteOptions)
}

// allocates reports whether writes of c's resource go through the
// ServiceAllocator: the main resource of core v1 services (kube's
// status store has no Begin hooks).
func (c *call) allocates() bool {
	return c.s.services != nil && c.res.group == "" && c.res.plural == "services" &&
		!c.status && c.sub == "" && !c.finalize
}

// beginAllocation runs the allocator's hook for obj (old nil on create),
// where kube's store runs it: after admission, before the strategy. The
// finish function is kept on c until finishAllocation.
func (c *call) beginAllocation(ctx context.Context, obj, old runtime.Object) error {
	if !c.allocates() {
		return nil
	}
	dry := c.dryRunOptions()
	var (
		fn  genericregistry.FinishFunc
		err error
	)
	if old == nil {
		fn, err = c.s.services.BeginCreate(ctx, obj, &metav1.CreateOptions{DryRun: dry})
	} else {
		fn, err = c.s.services.BeginUpdate(ctx, obj, old, &metav1.UpdateOptions{DryRun: dry})
	}
	if err != nil {
		return kubeStatus(err)
	}
	c.allocated = fn
	return nil
}

// finishAllocation commits (the write was stored, or is a dry run that
// would have been) or reverts what beginAllocation allocated.
func (c *call) finishAllocation(success bool) {
	if fn := c.allocated; fn != nil {
		c.allocated = nil
		fn(c.r.Context(), success)
	}
}

func (c *call) dryRunOptions() []string {
	if isDryRun(c.r) {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// servicesPrefix is where Services are stored (kube's key layout).
const servicesPrefix = "/registry/services/specs/"

// afterDelete releases what a deleted object held: a Service's cluster
// IPs and node ports. key and value are the deleted key and its last
// stored value. Every path that deletes an object calls it.
func (s *Server) afterDelete(key string, value []byte) {
	if s.services == nil || !strings.HasPrefix(key, servicesPrefix) || len(value) == 0 {
		return
	}
	r, ok := s.reg.lookup("", "v1", "services")
	if !ok {
		return
	}
	d, err := decodeDoc(value)
	if err != nil {
		s.log.Error("releasing a deleted service's allocations", "key", key, "err", err)
		return
	}
	obj, err := r.typed().decodeStored(d)
	if err != nil {
		s.log.Error("releasing a deleted service's allocations", "key", key, "err", err)
		return
	}
	s.services.AfterDelete(obj, &metav1.DeleteOptions{})
}
