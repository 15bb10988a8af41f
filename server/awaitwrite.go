package server

// CommittedWrite is a write of one object that storage committed, as
// Config.AwaitWrite is told of it.
type CommittedWrite struct {
	// Group and Resource are the object's API group ("" for the core
	// group) and resource (plural); Namespace is "" for a cluster-scoped
	// object.
	Group, Resource string
	Namespace, Name string
	// ResourceVersion is the revision of the write: the object's new
	// resourceVersion, or, when Gone, the revision of the delete (or of
	// the object deleted): an object of the name at a later revision is
	// a new one.
	ResourceVersion int64
	// Gone: the write removed the object (a delete that only set its
	// deletionTimestamp is an update).
	Gone bool
}

// awaitWrite tells Config.AwaitWrite of the write c committed at rev (see
// there) and returns once it returns; nothing for a dry run.
func (c *call) awaitWrite(rev int64, gone bool) {
	if c.s.awaitWrite == nil || rev == 0 || isDryRun(c.r) {
		return
	}
	c.s.awaitWrite(c.r.Context(), CommittedWrite{
		Group: c.res.group, Resource: c.res.plural,
		Namespace: c.ns, Name: c.name,
		ResourceVersion: rev, Gone: gone,
	})
}

// The single-object writes call awaitWrite where the committed object is
// known and the answer not yet written: createDoc (a create, and an
// update or apply that creates), updateFrom (update, patch, apply, scale,
// status; an update that removed the last finalizer of an object being
// deleted is Gone), delete (deleteflow's deleteObject, through delete)
// and unsafeDelete. deletecollection does not wait: its answer follows
// many writes, and kube-apiserver's informers lag it as they lag any
// write.
