package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// Deletion of an object that is not a namespace or a CRD, as kube's
// generic registry does it (k8s.io/apiserver pkg/registry/generic/registry
// Store.Delete, updateForGracefulDeletionAndFinalizers, markAsDeleting,
// deletionFinalizersForGarbageCollection; pkg/registry/rest BeforeDelete):
//
//   - an object with finalizers (its own, or the orphan/foregroundDeletion
//     finalizer the propagation policy adds) is not deleted but marked:
//     deletionTimestamp now, deletionGracePeriodSeconds 0, generation
//     bumped if set. The write that removes its last finalizer deletes it
//     (see finalizedByUpdate).
//   - a resource with graceful deletion (pods, see podGracePeriod) is
//     marked with deletionTimestamp now+grace and deletionGracePeriodSeconds
//     grace; with a grace of 0 and no finalizers it is then deleted.
//   - an object already being deleted is answered as it is (no write),
//     unless the request shortens a pod's grace period or changes the
//     propagation finalizers.

// deleteRequest is the DeleteOptions of a request: wire's, plus the
// deprecated orphanDependents that kube still honours.
type deleteRequest struct {
	wire.DeleteOptions
	OrphanDependents *bool `json:"orphanDependents,omitempty"`
	// unsafe: ignoreStoreReadErrorWithClusterBreakingPotential, which
	// deletes only an object storage cannot read (unsafedelete.go).
	unsafe bool
}

// deleteAction is what a DELETE does to the object it read.
type deleteAction int

const (
	// deleteNow removes the object.
	deleteNow deleteAction = iota
	// deletePending answers the object as it is: a graceful deletion
	// with at most this grace period is already under way.
	deletePending
	// deleteMark writes plan.next (deletionTimestamp, finalizers), and
	// then removes it if plan.thenDelete.
	deleteMark
)

type deletePlan struct {
	action     deleteAction
	next       *doc
	thenDelete bool
}

// planDelete decides what a DELETE with o does to cur, as BeforeDelete and
// updateForGracefulDeletionAndFinalizers do.
func (c *call) planDelete(cur *doc, o deleteRequest, now time.Time) deletePlan {
	next := cur.clone()
	grace := o.GracePeriodSeconds
	if grace != nil && *grace < 0 {
		grace = new(int64(1)) // negative means 1s on the delete path
	}
	graceful := false
	var period int64
	if c.res.gracefulDelete() {
		if ts, ok := cur.metaTime("deletionTimestamp"); ok {
			old := cur.metaInt("deletionGracePeriodSeconds")
			if old != nil && *old < 0 {
				old = new(int64(1))
			}
			switch {
			case old == nil || *old == 0:
				// Marked with no grace left: finish the deletion.
			case grace == nil || *grace >= *old:
				// Only a shorter grace period changes anything.
				return deletePlan{action: deletePending}
			default:
				period = *grace
				at := ts.Add(-time.Duration(*old) * time.Second).Add(time.Duration(period) * time.Second)
				if at.Before(now) {
					at = now
					if period != 0 {
						period = 1
					}
				}
				next.setMetaTime("deletionTimestamp", at)
				next.setMeta("deletionGracePeriodSeconds", period)
				graceful = true
			}
		} else {
			period = podGracePeriod(cur, grace)
			next.setMetaTime("deletionTimestamp", now.Add(time.Duration(period)*time.Second))
			next.setMeta("deletionGracePeriodSeconds", period)
			next.bumpGeneration()
			graceful = true
		}
	}
	fins := cur.finalizers()
	newFins, changed := gcFinalizers(gcPolicyOf(c.res), fins, o)
	if !graceful && len(fins) == 0 && !changed {
		return deletePlan{action: deleteNow}
	}
	if changed {
		next.setFinalizers(newFins)
	}
	pending := len(newFins) > 0
	if !graceful {
		if !pending {
			return deletePlan{action: deleteNow}
		}
		markAsDeleting(next, now)
		return deletePlan{action: deleteMark, next: next}
	}
	return deletePlan{action: deleteMark, next: next, thenDelete: !pending && period == 0}
}

// markAsDeleting is kube's markAsDeleting: the deletionTimestamp is now
// unless already earlier, the grace period 0, and a first marking bumps a
// generation that is set.
func markAsDeleting(d *doc, now time.Time) {
	ts, ok := d.metaTime("deletionTimestamp")
	if !ok {
		d.bumpGeneration()
	}
	if !ok || ts.After(now) {
		d.setMetaTime("deletionTimestamp", now)
	}
	d.setMeta("deletionGracePeriodSeconds", 0)
}

// deleteResult is the outcome of one object's DELETE.
type deleteResult struct {
	value   []byte // the object as last stored (or as it would be, dry run)
	cur     *doc   // the object as read
	deleted bool   // gone (or would be)
	pending bool   // a graceful deletion was under way: nothing done
	rev     int64  // the revision of the deletion, once deleted (not dry)
	marked  int64  // the revision of the marking written, if any (not dry)
}

// deleteObject runs a DELETE of the object at key, as kube's Store.Delete
// does, retrying from the read when another writer got in between.
func (c *call) deleteObject(ctx context.Context, name string, o deleteRequest, dry bool) (deleteResult, error) {
	key := c.res.key(c.ns, name)
	for attempt := 0; ; attempt++ {
		kv, err := c.s.store.Get(ctx, key)
		if err != nil {
			return deleteResult{}, storageError(err, c.res, name)
		}
		cur, err := decodeDoc(kv.Value)
		if err != nil {
			return deleteResult{}, wire.NewInternalError(err)
		}
		if attempt == 0 {
			err = c.beforeDeletePreconditions(o.DeleteOptions, cur, name, kv.Revision)
		} else {
			err = c.checkPreconditions(o.DeleteOptions, cur, kv.Revision)
		}
		if err != nil {
			return deleteResult{}, err
		}
		if err := c.validateDeleteOf(kv, cur, name); err != nil {
			return deleteResult{}, err
		}
		p := c.planDelete(cur, o, c.s.now())
		retry := func(err error) bool {
			return errors.Is(err, storage.ErrConflict) && attempt < 16
		}
		switch p.action {
		case deletePending:
			return deleteResult{value: kv.Value, cur: cur, pending: true}, nil
		case deleteNow:
			if dry {
				return deleteResult{value: kv.Value, cur: cur, deleted: true}, nil
			}
			last, err := c.s.store.Delete(ctx, key, kv.Revision)
			if retry(err) {
				continue
			}
			if err != nil {
				return deleteResult{}, storageError(err, c.res, name)
			}
			c.tr.Step("Object deleted from database")
			c.s.afterDelete(key, last.Value)
			return deleteResult{value: last.Value, cur: cur, deleted: true, rev: last.Revision}, nil
		}
		value := p.next.encode()
		stored, rev := kv.Value, kv.Revision
		unchanged := bytes.Equal(value, cur.encode())
		if c.res.crd != "" {
			value = keyOrdered(value) // as toStorage
		}
		switch {
		case unchanged:
			// Already marked so: nothing to write, as kube's no-op update.
		case dry:
			if stored, err = storage.WithResourceVersion(value, kv.Revision); err != nil {
				return deleteResult{}, err
			}
		default:
			rev, err = c.s.store.Update(ctx, key, value, kv.Revision)
			if retry(err) {
				continue
			}
			if err != nil {
				return deleteResult{}, storageError(err, c.res, name)
			}
			c.tr.Step("Object marked for deletion")
			if stored, err = storage.WithResourceVersion(value, rev); err != nil {
				return deleteResult{}, err
			}
		}
		if !p.thenDelete {
			res := deleteResult{value: stored, cur: cur}
			if !unchanged && !dry {
				res.marked = rev
			}
			return res, nil
		}
		if dry {
			return deleteResult{value: stored, cur: cur, deleted: true}, nil
		}
		// As kube, the grace period is over: delete what was just marked,
		// at its new revision when the client pinned one, and take a
		// delete by someone else meanwhile as done.
		expect := int64(0)
		if o.Preconditions != nil && o.Preconditions.ResourceVersion != nil {
			expect = rev
		}
		last, err := c.s.store.Delete(ctx, key, expect)
		if errors.Is(err, storage.ErrNotFound) {
			return deleteResult{value: stored, cur: cur, deleted: true}, nil
		}
		if err != nil {
			return deleteResult{}, storageError(err, c.res, name)
		}
		c.tr.Step("Object deleted from database")
		c.s.afterDelete(key, last.Value)
		return deleteResult{value: last.Value, cur: cur, deleted: true, rev: last.Revision}, nil
	}
}

// writeDeleteResult answers a DELETE as kube's handler does: the deleted
// object or a Success Status (see writeDeleted) when it is gone, the
// object as marked when it stays; 202 instead of 200 when it stays and
// the client asked for orphanDependents=false.
func (c *call) writeDeleteResult(res deleteResult, o deleteRequest) error {
	code := http.StatusOK
	if !res.deleted && o.OrphanDependents != nil && !*o.OrphanDependents {
		code = http.StatusAccepted
	}
	if res.deleted || res.pending {
		return c.writeDeletedCode(code, res.value, res.cur)
	}
	return c.writeObject(code, res.value)
}

// beforeDeletePreconditions checks the DeleteOptions preconditions against
// the object first read, with BeforeDelete's words.
func (c *call) beforeDeletePreconditions(o wire.DeleteOptions, cur *doc, name string, rev int64) error {
	p := o.Preconditions
	if p == nil {
		return nil
	}
	gr := wire.GroupResource{Group: c.res.group, Resource: c.res.kind}
	if uid := cur.metaString("uid"); p.UID != nil && *p.UID != uid {
		return wire.NewConflict(gr, name, fmt.Sprintf(
			"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, uid))
	}
	if rv := strconv.FormatInt(rev, 10); p.ResourceVersion != nil && *p.ResourceVersion != rv {
		return wire.NewConflict(gr, name, fmt.Sprintf(
			"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, rv))
	}
	return nil
}
