package garbagecollector

import (
	"context"
	"errors"
	"log/slog"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/object"
)

// Propagation policies, as DeleteOptions spells them.
const (
	policyBackground = "Background"
	policyForeground = "Foreground"
	policyOrphan     = "Orphan"
)

// errVirtualDeleted: the item's object does not exist; a virtual delete
// event has updated the graph.
var errVirtualDeleted = errors.New("garbagecollector: enqueued virtual delete event")

// attemptToDelete is the reconciler of the attempt-to-delete queue, whose
// keys are uids: kube's attemptToDeleteWorker. It collects a dependent
// whose owners are all gone, verifies virtual owners, and finishes
// foreground deletions.
func (c *Controller) attemptToDelete(ctx context.Context, uid string) (controller.Result, error) {
	item, ok := c.graph.view(uid)
	if !ok {
		return controller.Result{}, nil // deleted from the graph meanwhile
	}
	requeue, err := c.attemptToDeleteItem(ctx, item)
	switch {
	case errors.Is(err, errVirtualDeleted):
		return controller.Result{Requeue: requeue}, nil
	case errors.Is(err, errNamespacedOwnerOfClusterScoped):
		return controller.Result{}, nil
	case err != nil:
		var rm *errRESTMapping
		if errors.As(err, &rm) {
			c.signalDiscovery()
		}
		return controller.Result{}, err
	case !c.graph.isObserved(uid):
		// Verified to exist but not seen by an informer yet: poll until
		// it is, so that a virtual node whose object came and went while
		// a watch was down cannot stay in the graph.
		if _, ok := c.graph.view(uid); ok {
			return controller.Result{Requeue: true}, nil
		}
	}
	return controller.Result{}, nil
}

// attemptToDeleteItem looks up item's live object and deletes it if its
// uid matches, it is not waiting for its own dependents, and all its owners
// are gone. requeue is set with errVirtualDeleted when the graph wants the
// node verified again under another identity.
func (c *Controller) attemptToDeleteItem(ctx context.Context, item nodeView) (requeue bool, err error) {
	log := c.log.With("item", item.identity)
	log.Debug("processing item", "virtual", item.virtual)
	if item.beingDeleted && !item.deletingDependents {
		return false, nil // on its way out; its deletion will be observed
	}
	latest, err := c.getObject(ctx, item.identity)
	switch {
	case client.IsNotFound(err):
		log.Debug("item not found, generating a virtual delete event")
		return c.virtualDelete(item.identity), errVirtualDeleted
	case err != nil:
		return false, err
	}
	if latest.GetUID() != item.identity.UID {
		log.Debug("UID doesn't match, item not found, generating a virtual delete event")
		return c.virtualDelete(item.identity), errVirtualDeleted
	}
	if item.deletingDependents {
		return false, c.processDeletingDependentsItem(ctx, item)
	}
	rawRefs, _ := rawOwners(latest)
	refs := ownersOf(latest)
	if len(refs) == 0 {
		log.Debug("item doesn't have an owner, continue on next item")
		return false, nil
	}
	solid, dangling, waiting, err := c.classifyReferences(ctx, item.identity, refs)
	if err != nil {
		return false, err
	}
	switch {
	case len(solid) != 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			log.Debug("item has at least one existing owner, will not garbage collect", "owners", solid)
			return false, nil
		}
		// Waiting references go too, or their owners would wait for this
		// dependent forever.
		uids := append(uidsOf(dangling), uidsOf(waiting)...)
		log.Info("removing dangling and waiting owner references", "dangling", dangling, "waiting", waiting)
		return false, c.removeOwnerRefs(ctx, item.identity, uids...)
	case len(waiting) != 0 && len(item.dependents) != 0:
		for _, dep := range item.dependents {
			if v, ok := c.graph.view(dep.UID); ok && v.deletingDependents {
				// A cycle, maybe: as kube, stop blocking our owners
				// before deleting in the foreground.
				log.Info("some owners and a dependent of item are deleting dependents; unblocking its owner references to prevent a cycle", "dependent", dep)
				if err := c.unblockOwnerRefs(ctx, item.identity); err != nil {
					return false, err
				}
				break
			}
		}
		log.Info("deleting item in the foreground: an owner is waiting for its dependents and it has dependents")
		return c.deleteItem(ctx, item.identity, latest, rawRefs, policyForeground)
	default:
		policy := policyBackground
		m := metaOf(latest)
		switch {
		case m.hasFinalizer(finalizerOrphan):
			policy = policyOrphan
		case m.hasFinalizer(finalizerForeground):
			policy = policyForeground
		}
		log.Info("deleting item", "propagationPolicy", policy)
		return c.deleteItem(ctx, item.identity, latest, rawRefs, policy)
	}
}

func (c *Controller) deleteItem(ctx context.Context, id objectReference, latest *object.Unstructured, refs []map[string]any, policy string) (bool, error) {
	err := c.deleteObject(ctx, id, latest.GetResourceVersion(), refs, policy)
	if client.IsNotFound(err) {
		return c.virtualDelete(id), errVirtualDeleted
	}
	return false, err
}

// virtualDelete tells the graph id does not exist.
func (c *Controller) virtualDelete(id objectReference) bool {
	return c.processEvent(event{
		virtual:    true,
		typ:        deleteEvent,
		apiVersion: id.APIVersion,
		kind:       id.Kind,
		meta:       objectMeta{Namespace: id.Namespace, Name: id.Name, UID: id.UID},
	})
}

// processDeletingDependentsItem finishes a foreground deletion once no
// blocking dependent remains, and otherwise sends the blocking dependents
// to be deleted.
func (c *Controller) processDeletingDependentsItem(ctx context.Context, item nodeView) error {
	blocking := c.graph.blockingDependents(item.identity.UID)
	if len(blocking) == 0 {
		c.log.Info("removing the foregroundDeletion finalizer: no blocking dependents remain", "item", item.identity)
		return c.removeFinalizer(ctx, item.identity, finalizerForeground)
	}
	for _, dep := range blocking {
		if !dep.deletingDependents {
			c.log.Debug("adding dependent to attemptToDelete, because its owner is deletingDependents", "item", item.identity, "dependent", dep.identity)
			c.enqueueDelete(dep.identity.UID)
		}
	}
	return nil
}

// classifyReferences sorts an item's owner references: solid (the owner
// exists and is not deleting its dependents in the foreground), dangling
// (the owner does not exist, or another object holds its name), and
// waiting (the owner is deleting its dependents in the foreground).
func (c *Controller) classifyReferences(ctx context.Context, item objectReference, refs []ownerReference) (solid, dangling, waiting []ownerReference, err error) {
	for _, ref := range refs {
		isDangling, owner, err := c.isDangling(ctx, ref, item)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, ref)
		case metaOf(owner).deletingDependents():
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling looks the owner up, in the absent-owner cache first, then on
// the server (never in the informers' caches, which may lag): absent, or
// present under another uid, it dangles.
func (c *Controller) isDangling(ctx context.Context, ref ownerReference, item objectReference) (bool, *object.Unstructured, error) {
	key := objectReference{ownerReference: ref.coordinates()}
	if c.absent.has(key) {
		return true, nil, nil
	}
	key.Namespace = item.Namespace
	if c.absent.has(key) {
		return true, nil, nil
	}
	mp, err := c.mapper.resourceFor(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if !mp.namespaced {
		key.Namespace = ""
	}
	if item.Namespace == "" && mp.namespaced {
		c.log.Debug("item is cluster-scoped, but refers to a namespaced owner", "item", item, "owner", ref)
		return false, nil, errNamespacedOwnerOfClusterScoped
	}
	owner, err := c.getObject(ctx, key)
	switch {
	case client.IsNotFound(err):
		c.absent.add(key)
		c.log.Debug("item's owner is not found", "item", item, "owner", ref)
		return true, nil, nil
	case err != nil:
		return false, nil, err
	}
	if owner.GetUID() != ref.UID {
		c.log.Debug("item's owner is not found, UID mismatch", "item", item, "owner", ref, slog.String("liveUID", owner.GetUID()))
		c.absent.add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

func uidsOf(refs []ownerReference) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.UID)
	}
	return out
}
