package garbagecollector

import "sync"

// node is one object in the ownership graph, observed through an informer
// or (virtual) known only because a dependent names it as an owner. Every
// field is guarded by graph.mu.
type node struct {
	identity objectReference
	// dependents are the nodes whose ownerReferences name this node's uid.
	dependents map[*node]struct{}
	// owners is the node's metadata.ownerReferences as last observed.
	owners []ownerReference
	// deletingDependents: deletionTimestamp set with the
	// foregroundDeletion finalizer (a one-way trip).
	deletingDependents bool
	// beingDeleted: deletionTimestamp set (a one-way trip).
	beingDeleted bool
	// virtual: never observed through an informer.
	virtual bool
}

// blockingDependents are the dependents whose reference to n has
// blockOwnerDeletion: a foreground deletion of n waits for them.
func (n *node) blockingDependentsLocked() []*node {
	var out []*node
	for dep := range n.dependents {
		for _, o := range dep.owners {
			if o.UID == n.identity.UID && o.BlockOwnerDeletion {
				out = append(out, dep)
				break
			}
		}
	}
	return out
}

// nodeView is a copy of a node's fields, for a worker that works without
// the graph's lock.
type nodeView struct {
	identity           objectReference
	owners             []ownerReference
	dependents         []objectReference
	deletingDependents bool
	beingDeleted       bool
	virtual            bool
}

// graph is the ownership graph keyed by uid. The graph builder (informer
// handlers and the virtual events workers produce) writes it under mu;
// workers read it under mu.RLock.
type graph struct {
	mu    sync.RWMutex
	nodes map[string]*node // by uid; guarded by mu
}

func newGraph() *graph { return &graph{nodes: map[string]*node{}} }

// view returns a copy of the node with uid, or false.
func (g *graph) view(uid string) (nodeView, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return nodeView{}, false
	}
	v := nodeView{
		identity:           n.identity,
		owners:             append([]ownerReference(nil), n.owners...),
		deletingDependents: n.deletingDependents,
		beingDeleted:       n.beingDeleted,
		virtual:            n.virtual,
	}
	for dep := range n.dependents {
		v.dependents = append(v.dependents, dep.identity)
	}
	return v, true
}

// isObserved reports whether uid's node exists and is not virtual.
func (g *graph) isObserved(uid string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return ok && !n.virtual
}

// dependentsOf returns the identities of the dependents of uid.
func (g *graph) dependentsOf(uid string) []objectReference {
	v, _ := g.view(uid)
	return v.dependents
}

// blockingDependents returns the views of uid's blocking dependents.
func (g *graph) blockingDependents(uid string) []nodeView {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return nil
	}
	var out []nodeView
	for _, d := range n.blockingDependentsLocked() {
		out = append(out, nodeView{identity: d.identity, deletingDependents: d.deletingDependents})
	}
	return out
}

// len is the number of nodes, for tests and metrics.
func (g *graph) len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}
