package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
)

// attemptToOrphan is the reconciler of the attempt-to-orphan queue (keys
// are uids): for an owner deleted with the orphan finalizer it removes the
// references to it from every dependent the graph knows, then the
// finalizer, as kube's attemptToOrphanWorker.
func (c *Controller) attemptToOrphan(ctx context.Context, uid string) (controller.Result, error) {
	owner, ok := c.graph.view(uid)
	if !ok {
		return controller.Result{}, nil
	}
	if err := c.orphanDependents(ctx, owner.identity, owner.dependents); err != nil {
		return controller.Result{}, err
	}
	if err := c.removeFinalizer(ctx, owner.identity, finalizerOrphan); err != nil {
		return controller.Result{}, fmt.Errorf("removing the orphan finalizer from %s: %w", owner.identity, err)
	}
	c.log.Info("orphaned dependents and removed the orphan finalizer", "owner", owner.identity, "dependents", len(owner.dependents))
	return controller.Result{}, nil
}

// orphanDependents removes owner from the ownerReferences of dependents,
// in parallel as kube does.
func (c *Controller) orphanDependents(ctx context.Context, owner objectReference, dependents []objectReference) error {
	errs := make([]error, len(dependents))
	var wg sync.WaitGroup
	for i, dep := range dependents {
		wg.Go(func() {
			err := c.removeOwnerRefs(ctx, dep, owner.UID)
			if err != nil && !client.IsNotFound(err) {
				errs[i] = fmt.Errorf("orphaning %s: %w", dep, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("orphaning the dependents of %s: %w", owner, err)
	}
	return nil
}
