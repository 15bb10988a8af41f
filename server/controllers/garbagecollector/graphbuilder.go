package garbagecollector

// The graph builder: what kube's GraphBuilder.processGraphChanges does with
// each informer event, and with the virtual delete events the workers make
// when the server says a node's object does not exist. Events are applied
// one at a time under graph.mu (kube funnels them through one queue and one
// goroutine; the lock gives the same serial order).

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
)

// event is one change to apply to the graph.
type event struct {
	// virtual: made by a worker, not observed by an informer.
	virtual bool
	typ     eventType
	// apiVersion and kind of the object (the monitor's, for observed
	// events: list items do not carry them).
	apiVersion, kind string
	meta             objectMeta
	// old is the previous state of an update, nil otherwise.
	old *objectMeta
}

func (e event) identity() objectReference {
	return objectReference{
		ownerReference: ownerReference{APIVersion: e.apiVersion, Kind: e.kind, Name: e.meta.Name, UID: e.meta.UID},
		Namespace:      e.meta.Namespace,
	}
}

// processEvent applies ev to the graph. It reports whether the caller (the
// worker of a virtual delete) should requeue its key rate-limited, because
// the node was replaced by another candidate identity to verify.
func (c *Controller) processEvent(ev event) (requeue bool) {
	c.graph.mu.Lock()
	defer c.graph.mu.Unlock()
	return c.processEventLocked(ev)
}

func (c *Controller) processEventLocked(ev event) (requeue bool) {
	uid := ev.meta.UID
	if uid == "" {
		return false
	}
	existing, found := c.graph.nodes[uid]
	if found && !ev.virtual && existing.virtual {
		c.observeVirtualLocked(existing, ev.identity())
	}
	switch {
	case (ev.typ == addEvent || ev.typ == updateEvent) && !found:
		n := &node{
			identity:           ev.identity(),
			dependents:         map[*node]struct{}{},
			owners:             ev.meta.Owners,
			deletingDependents: ev.meta.deletingDependents(),
			beingDeleted:       ev.meta.BeingDeleted,
		}
		c.graph.nodes[uid] = n
		c.addDependentToOwnersLocked(n, n.owners)
		c.processTransitionsLocked(ev.old, ev.meta, n)
	case ev.typ == addEvent || ev.typ == updateEvent:
		added, removed, changed := referencesDiffs(existing.owners, ev.meta.Owners)
		if len(added) != 0 || len(removed) != 0 || len(changed) != 0 {
			c.addUnblockedOwnersToDeleteQueueLocked(removed, changed)
			existing.owners = ev.meta.Owners
			c.addDependentToOwnersLocked(existing, added)
			c.removeDependentFromOwnersLocked(existing, removed)
		}
		if ev.meta.BeingDeleted {
			existing.beingDeleted = true
		}
		c.processTransitionsLocked(ev.old, ev.meta, existing)
	case ev.typ == deleteEvent:
		if !found {
			return false
		}
		remove := true
		if ev.virtual {
			remove, requeue = c.virtualDeleteLocked(existing, ev.identity())
		}
		if remove {
			c.removeNodeLocked(existing, ev.identity())
		}
	}
	return requeue
}

// observeVirtualLocked turns a virtual node into an observed one. If the
// dependents named it with other coordinates than the object has, those
// dependents are checked again (their reference may be invalid).
func (c *Controller) observeVirtualLocked(n *node, observed objectReference) {
	if observed != n.identity {
		_, invalid := partitionDependentsLocked(n, observed)
		for _, dep := range invalid {
			if observed.Namespace != "" && dep.identity.Namespace != observed.Namespace {
				c.reportInvalidNamespaceOwnerRefLocked(dep, observed.UID)
			}
			c.enqueueDelete(dep.identity.UID)
		}
		c.log.Debug("replacing virtual item with observed item", "virtual", n.identity, "observed", observed)
		n.identity = observed
	}
	n.virtual = false
}

// virtualDeleteLocked handles a worker's verdict that deleted does not
// exist, for an existing node that may carry other coordinates. It reports
// whether to remove the node, and whether the worker should requeue it.
func (c *Controller) virtualDeleteLocked(n *node, deleted objectReference) (remove, requeue bool) {
	if n.virtual {
		matching, nonmatching := partitionDependentsLocked(n, deleted)
		if len(nonmatching) == 0 {
			return true, false
		}
		// Some dependents disagree on the owner's coordinates: keep the
		// node, collect those that agree, try another identity.
		if len(matching) > 0 {
			c.absent.add(deleted)
			for _, dep := range matching {
				c.enqueueDelete(dep.identity.UID)
			}
		}
		if n.identity == deleted {
			if alt := alternateOwnerIdentityLocked(nonmatching, deleted); alt != nil {
				n.identity = *alt
				requeue = true
			}
		}
		return false, requeue
	}
	if n.identity != deleted {
		// An observed node outranks a virtual verdict on other coordinates.
		matching, _ := partitionDependentsLocked(n, deleted)
		if len(matching) > 0 {
			c.absent.add(deleted)
			for _, dep := range matching {
				c.enqueueDelete(dep.identity.UID)
			}
		}
		return false, false
	}
	return true, false
}

// removeNodeLocked drops n, sends its dependents to be collected and its
// foreground-deleting owners to be checked again.
func (c *Controller) removeNodeLocked(n *node, deleted objectReference) {
	delete(c.graph.nodes, n.identity.UID)
	c.removeDependentFromOwnersLocked(n, n.owners)
	if len(n.dependents) > 0 {
		c.absent.add(deleted)
	}
	for dep := range n.dependents {
		c.enqueueDelete(dep.identity.UID)
	}
	for _, o := range n.owners {
		if owner, ok := c.graph.nodes[o.UID]; ok && owner.deletingDependents {
			c.enqueueDelete(owner.identity.UID)
		}
	}
}

// processTransitionsLocked starts orphaning or foreground deletion when an
// object's deletion starts with the matching finalizer.
func (c *Controller) processTransitionsLocked(old *objectMeta, cur objectMeta, n *node) {
	if startsWith(old, cur, finalizerOrphan) {
		c.log.Debug("add item to attemptToOrphan", "item", n.identity)
		c.enqueueOrphan(n.identity.UID)
		return
	}
	if startsWith(old, cur, finalizerForeground) {
		c.log.Debug("add item to attemptToDelete, because it's waiting for its dependents to be deleted", "item", n.identity)
		n.deletingDependents = true
		for dep := range n.dependents {
			c.enqueueDelete(dep.identity.UID)
		}
		c.enqueueDelete(n.identity.UID)
	}
}

// startsWith: cur is being deleted with finalizer f, and old was not (or
// there is no old state).
func startsWith(old *objectMeta, cur objectMeta, f string) bool {
	if !cur.BeingDeleted || !cur.hasFinalizer(f) {
		return false
	}
	return old == nil || !old.BeingDeleted || !old.hasFinalizer(f)
}

type ownerRefPair struct{ old, new ownerReference }

// referencesDiffs compares two ownerReferences lists by uid.
func referencesDiffs(old, cur []ownerReference) (added, removed []ownerReference, changed []ownerRefPair) {
	byUID := make(map[string]ownerReference, len(old))
	for _, r := range old {
		byUID[r.UID] = r
	}
	for _, r := range cur {
		o, ok := byUID[r.UID]
		if !ok {
			added = append(added, r)
			continue
		}
		if o != r {
			changed = append(changed, ownerRefPair{o, r})
		}
		delete(byUID, r.UID)
	}
	for _, r := range old {
		if _, ok := byUID[r.UID]; ok {
			removed = append(removed, r)
		}
	}
	return added, removed, changed
}

// addUnblockedOwnersToDeleteQueueLocked: a blocking reference removed or
// made non-blocking may let a foreground deletion finish.
func (c *Controller) addUnblockedOwnersToDeleteQueueLocked(removed []ownerReference, changed []ownerRefPair) {
	for _, r := range removed {
		if r.BlockOwnerDeletion {
			if n, ok := c.graph.nodes[r.UID]; ok {
				c.enqueueDelete(n.identity.UID)
			}
		}
	}
	for _, p := range changed {
		if p.old.BlockOwnerDeletion && !p.new.BlockOwnerDeletion {
			if n, ok := c.graph.nodes[p.new.UID]; ok {
				c.enqueueDelete(n.identity.UID)
			}
		}
	}
}

// addDependentToOwnersLocked links n under each of owners, creating a
// virtual node (to be verified by a worker) for an owner not seen yet, and
// sends n to be checked if a reference looks invalid.
func (c *Controller) addDependentToOwnersLocked(n *node, owners []ownerReference) {
	suspect := false
	for _, o := range owners {
		owner, ok := c.graph.nodes[o.UID]
		if !ok {
			owner = &node{
				identity:   objectReference{ownerReference: o.coordinates(), Namespace: n.identity.Namespace},
				dependents: map[*node]struct{}{},
				virtual:    true,
			}
			c.graph.nodes[o.UID] = owner
		}
		owner.dependents[n] = struct{}{}
		if !ok {
			c.enqueueDelete(owner.identity.UID)
			continue
		}
		if suspect {
			continue
		}
		ownerNamespaced := owner.identity.Namespace != ""
		switch {
		case ownerNamespaced && owner.identity.Namespace != n.identity.Namespace:
			if !owner.virtual {
				c.reportInvalidNamespaceOwnerRefLocked(n, o.UID)
			}
			suspect = true
		case o.coordinates() != owner.identity.ownerReference:
			if !owner.virtual {
				c.log.Debug("item references an owner with coordinates that do not match the observed identity", "item", n.identity, "owner", owner.identity)
			}
			suspect = true
		case !ownerNamespaced && owner.identity.Namespace != n.identity.Namespace && owner.virtual:
			suspect = true
		}
	}
	if suspect {
		c.enqueueDelete(n.identity.UID)
	}
}

func (c *Controller) removeDependentFromOwnersLocked(n *node, owners []ownerReference) {
	for _, o := range owners {
		if owner, ok := c.graph.nodes[o.UID]; ok {
			delete(owner.dependents, n)
		}
	}
}

// partitionDependentsLocked splits n's dependents into those whose
// reference to n's uid matches id's coordinates (and namespace) and those
// with one that does not; a dependent may be in both.
func partitionDependentsLocked(n *node, id objectReference) (matching, nonmatching []*node) {
	namespaced := id.Namespace != ""
	for dep := range n.dependents {
		match, mismatch := false, false
		if namespaced && id.Namespace != dep.identity.Namespace {
			mismatch = true
		} else {
			for _, r := range dep.owners {
				if r.UID != id.UID {
					continue
				}
				if r.coordinates() == id.ownerReference {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			nonmatching = append(nonmatching, dep)
		}
	}
	return matching, nonmatching
}

func referenceLess(a, b objectReference) bool {
	switch {
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	case a.APIVersion != b.APIVersion:
		return a.APIVersion < b.APIVersion
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	case a.Name != b.Name:
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// alternateOwnerIdentityLocked picks the next identity the dependents give
// the owner with absent's uid, after absent in referenceLess order (or the
// first, wrapping around), as kube does; nil when there is none.
func alternateOwnerIdentityLocked(deps []*node, absent objectReference) *objectReference {
	clusterScoped := absent.Namespace == ""
	seen := map[objectReference]bool{absent: true}
	var first, following *objectReference
	for _, dep := range deps {
		for _, r := range dep.owners {
			if r.UID != absent.UID {
				continue
			}
			if r.coordinates() == absent.ownerReference && (clusterScoped || absent.Namespace == dep.identity.Namespace) {
				continue
			}
			ref := objectReference{ownerReference: r.coordinates(), Namespace: dep.identity.Namespace}
			if clusterScoped && ref.APIVersion == absent.APIVersion && ref.Kind == absent.Kind {
				ref.Namespace = ""
			}
			if seen[ref] {
				continue
			}
			seen[ref] = true
			if first == nil || referenceLess(ref, *first) {
				first = &ref
			}
			if referenceLess(absent, ref) && (following == nil || referenceLess(ref, *following)) {
				following = &ref
			}
		}
	}
	if following != nil {
		return following
	}
	return first
}
