package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/storage"
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

// Finalizers the API server itself understands.
const (
	finalizerOrphan     = "orphan"
	finalizerForeground = "foregroundDeletion"
)

// deleteRequest is the DeleteOptions of a request: wire's, plus the
// deprecated orphanDependents that kube still honours.
type deleteRequest struct {
	wire.DeleteOptions
	OrphanDependents *bool `json:"orphanDependents,omitempty"`
}

// gcPolicy is a resource's default garbage collection policy, kube's
// rest.GarbageCollectionPolicy: "" deletes dependents in the background.
type gcPolicy string

const (
	gcDefault     gcPolicy = ""
	gcOrphan      gcPolicy = "OrphanDependents"
	gcUnsupported gcPolicy = "Unsupported"
)

// gcPolicyOf returns the DefaultGarbageCollectionPolicy of r's strategy in
// kube: events opt out of garbage collection; core/v1
// replicationcontrollers orphan by default for backward compatibility;
// every other resource (custom ones included) deletes dependents.
func gcPolicyOf(r *resource) gcPolicy {
	switch {
	case r.crd != "":
		return gcDefault
	case r.plural == "events" && (r.group == "" || r.group == "events.k8s.io"):
		return gcUnsupported
	case r.plural == "replicationcontrollers" && r.group == "" && r.version == "v1":
		return gcOrphan
	}
	return gcDefault
}

// gcFinalizers is kube's deletionFinalizersForGarbageCollection: the
// finalizers after a DELETE with opts, and whether they changed (as sets).
func gcFinalizers(policy gcPolicy, fins []string, o deleteRequest) ([]string, bool) {
	if policy == gcUnsupported {
		return fins, false
	}
	orphan, foreground := false, false
	switch {
	case o.OrphanDependents != nil:
		orphan = *o.OrphanDependents
	case o.PropagationPolicy != nil:
		orphan = *o.PropagationPolicy == "Orphan"
		foreground = *o.PropagationPolicy == "Foreground"
	case slices.Contains(fins, finalizerOrphan) || slices.Contains(fins, finalizerForeground):
		// A finalizer on the object decides; the first one listed wins,
		// as kube's loops over the list do.
		for _, f := range fins {
			if f == finalizerOrphan || f == finalizerForeground {
				orphan, foreground = f == finalizerOrphan, f == finalizerForeground
				break
			}
		}
	default:
		orphan = policy == gcOrphan
	}
	next := make([]string, 0, len(fins)+1)
	for _, f := range fins {
		if f != finalizerOrphan && f != finalizerForeground {
			next = append(next, f)
		}
	}
	if orphan {
		next = append(next, finalizerOrphan)
	}
	if foreground {
		next = append(next, finalizerForeground)
	}
	if sameSet(fins, next) {
		return fins, false
	}
	return next, true
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// finalizers returns d's metadata.finalizers.
func (d *doc) finalizers() []string {
	var f []string
	if raw, ok := d.meta["finalizers"]; ok {
		_ = json.Unmarshal(raw, &f)
	}
	return f
}

func (d *doc) setFinalizers(f []string) {
	if len(f) == 0 {
		delete(d.meta, "finalizers")
		return
	}
	d.setMeta("finalizers", f)
}

// metaTime returns a timestamp metadata field; ok false if absent or not
// an RFC 3339 time.
func (d *doc) metaTime(k string) (time.Time, bool) {
	s := d.metaString(k)
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

func (d *doc) setMetaTime(k string, t time.Time) {
	d.setMeta(k, t.UTC().Format(time.RFC3339))
}

// metaInt returns an integer metadata field; nil if absent.
func (d *doc) metaInt(k string) *int64 {
	raw, ok := d.meta[k]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return nil
	}
	return &n
}

func (d *doc) clone() *doc {
	return &doc{apiVersion: d.apiVersion, kind: d.kind, meta: cloneRaw(d.meta), rest: cloneRaw(d.rest)}
}

// bumpGeneration adds one to a generation that is set.
func (d *doc) bumpGeneration() {
	if g := d.metaInt("generation"); g != nil && *g > 0 {
		d.setMeta("generation", *g+1)
	}
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
			return deleteResult{value: last.Value, cur: cur, deleted: true}, nil
		}
		value := p.next.encode()
		stored, rev := kv.Value, kv.Revision
		switch {
		case bytes.Equal(value, cur.encode()):
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
			return deleteResult{value: stored, cur: cur}, nil
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
		return deleteResult{value: last.Value, cur: cur, deleted: true}, nil
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

// deleteQuery fills from the query the DeleteOptions fields the body left
// unset: gracePeriodSeconds, orphanDependents and dryRun (kube reads the
// query only without a body; reading both is a superset).
func deleteQuery(q url.Values, o *deleteRequest) error {
	if v := q.Get("gracePeriodSeconds"); v != "" && o.GracePeriodSeconds == nil {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return wire.NewBadRequest(fmt.Sprintf("gracePeriodSeconds: %v", err))
		}
		o.GracePeriodSeconds = &n
	}
	if v := q.Get("orphanDependents"); v != "" && o.OrphanDependents == nil {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return wire.NewBadRequest(fmt.Sprintf("orphanDependents: %v", err))
		}
		o.OrphanDependents = &b
	}
	if v := q["dryRun"]; len(v) > 0 && len(o.DryRun) == 0 {
		o.DryRun = v
	}
	return nil
}

// checkDeletionUpdate applies to an update (or patch) of cur into next what
// kube's BeforeUpdate and ValidateObjectMetaAccessorUpdate rule about
// deletion: a deletionTimestamp, once set, stays as it is and a grace
// period is kept when the update leaves it out; a client may not set or
// change either (422, "field is immutable"); no finalizer may be added to
// an object being deleted (422 Forbidden); and the orphan and
// foregroundDeletion finalizers exclude each other (ValidateFinalizers).
// A status write keeps the stored metadata and is not checked.
func (c *call) checkDeletionUpdate(next, cur *doc) error {
	if c.status {
		return nil
	}
	for _, k := range []string{"deletionTimestamp", "deletionGracePeriodSeconds"} {
		if v, ok := cur.meta[k]; ok {
			if _, set := next.meta[k]; !set || k == "deletionTimestamp" {
				next.meta[k] = v
			}
		}
	}
	var causes []wire.StatusCause
	fins := next.finalizers()
	if _, deleting := cur.meta["deletionTimestamp"]; deleting {
		var added []string
		for _, f := range fins {
			if !slices.Contains(cur.finalizers(), f) && !slices.Contains(added, f) {
				added = append(added, f)
			}
		}
		if len(added) > 0 {
			slices.Sort(added)
			causes = append(causes, fieldForbidden("metadata.finalizers", fmt.Sprintf(
				"no new finalizers can be added if the object is being deleted, found new finalizers %#v", added)))
		}
	}
	if ts, ok := next.metaTime("deletionTimestamp"); ok && next.metaString("deletionTimestamp") != cur.metaString("deletionTimestamp") {
		causes = append(causes, wire.StatusCause{Type: "FieldValueInvalid", Field: "metadata.deletionTimestamp",
			Message: fmt.Sprintf("Invalid value: %s: field is immutable", ts.String())})
	}
	if g, old := next.metaInt("deletionGracePeriodSeconds"), cur.metaInt("deletionGracePeriodSeconds"); g != nil && (old == nil || *g != *old) {
		causes = append(causes, wire.StatusCause{Type: "FieldValueInvalid", Field: "metadata.deletionGracePeriodSeconds",
			Message: fmt.Sprintf("Invalid value: %d: field is immutable", *g)})
	}
	if slices.Contains(fins, finalizerOrphan) && slices.Contains(fins, finalizerForeground) {
		causes = append(causes, wire.StatusCause{Type: "FieldValueInvalid", Field: "metadata.finalizers",
			Message: fmt.Sprintf("Invalid value: %#v: finalizer %s and %s cannot be both set", fins, finalizerOrphan, finalizerForeground)})
	}
	if len(causes) > 0 {
		return invalid(c.res.qualifiedKind(), c.res.group, c.res.kind, c.name, causes...)
	}
	return nil
}

// finalizedByUpdate reports whether writing next over cur deletes the
// object instead, as kube's ShouldDeleteDuringUpdate: cur is being deleted
// with no grace period left and next has no finalizers (for a namespace,
// no spec.finalizers either, as kube's namespace store adds).
func (c *call) finalizedByUpdate(next, cur *doc) bool {
	if _, deleting := cur.meta["deletionTimestamp"]; !deleting || len(next.finalizers()) > 0 {
		return false
	}
	if g := cur.metaInt("deletionGracePeriodSeconds"); g != nil && *g != 0 {
		return false
	}
	if c.res.crd == "" && c.res.group == "" && c.res.plural == "namespaces" {
		var spec struct {
			Finalizers []string `json:"finalizers"`
		}
		if next.field("spec", &spec); len(spec.Finalizers) > 0 {
			return false
		}
	}
	return true
}

// deleteFinalized deletes, instead of writing next, the object c names if
// it is still at revision rev, and answers next as the update's result
// (kube's deleteWithoutFinalizers). Watchers see one DELETED event. Its
// errors are storage's: ErrConflict means retry from the read.
func (s *Server) deleteFinalized(ctx context.Context, c *call, rev int64, next *doc) ([]byte, error) {
	out, err := storage.WithResourceVersion(next.encode(), rev)
	if err != nil || isDryRun(c.r) {
		return out, err
	}
	if _, err := s.store.Delete(ctx, c.res.key(c.ns, c.name), rev); err != nil {
		return nil, err
	}
	c.tr.Step("Object deleted from database: its last finalizer was removed")
	return out, nil
}
