package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// Finalizers and the deletion fields of metadata: the finalizers the
// propagation policy of a DELETE adds (kube's
// deletionFinalizersForGarbageCollection), what an update may do to an
// object being deleted (BeforeUpdate, ValidateObjectMetaAccessorUpdate),
// and the update that removes the last finalizer, which deletes
// (ShouldDeleteDuringUpdate). deleteflow.go is the DELETE itself.

// Finalizers the API server itself understands.
const (
	finalizerOrphan     = "orphan"
	finalizerForeground = "foregroundDeletion"
)

// gcPolicy is a resource's default garbage collection policy, kube's
// rest.GarbageCollectionPolicy: "" deletes dependents in the background.
type gcPolicy string

const (
	gcDefault     gcPolicy = ""
	gcOrphan      gcPolicy = "OrphanDependents"
	gcUnsupported gcPolicy = "Unsupported"
)

// gcPolicyOf returns the DefaultGarbageCollectionPolicy of r's strategy in
// kube: a built-in kind's is its own strategy's answer for a request of
// r's group and version (batch/v1 jobs and core/v1 replicationcontrollers
// orphan for backward compatibility, events of both groups opt out); every
// other resource (custom ones included, and built-ins whose strategy has no
// policy) deletes dependents.
func gcPolicyOf(r *resource) gcPolicy {
	if r.crd != "" {
		return gcDefault
	}
	if t := r.typed(); t != nil {
		if s, ok := t.strategy.(rest.GarbageCollectionDeleteStrategy); ok {
			ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{
				IsResourceRequest: true, APIGroup: r.group, APIVersion: r.version, Resource: r.plural,
			})
			switch s.DefaultGarbageCollectionPolicy(ctx) {
			case rest.OrphanDependents:
				return gcOrphan
			case rest.Unsupported:
				return gcUnsupported
			}
			return gcDefault
		}
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

// checkDeletionUpdate applies to an update (or patch) of cur into next, a
// custom resource, what kube's BeforeUpdate and
// ValidateObjectMetaAccessorUpdate rule about deletion: a
// deletionTimestamp, once set, stays as it is and a grace period is kept
// when the update leaves it out; a client may not set or change either
// (422, "field is immutable"); no finalizer may be added to an object
// being deleted (422 Forbidden); and the orphan and foregroundDeletion
// finalizers exclude each other (ValidateFinalizers). A resource with a
// schema gets those refusals from kube's validation (validateSchema), with
// its other faults; a built-in kind gets all of it from BeforeUpdate. A
// status write keeps the stored metadata and is not checked.
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
	if c.res.schema != nil {
		return nil
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
	key := c.res.key(c.ns, c.name)
	last, err := s.store.Delete(ctx, key, rev)
	if err != nil {
		return nil, err
	}
	s.afterDelete(key, last.Value)
	c.tr.Step("Object deleted from database: its last finalizer was removed")
	return out, nil
}

// holdNamespace is the end of a namespace's deletion when its own
// metadata.finalizers hold it: its contents are gone, so its
// spec.finalizers are emptied (as the namespace controller's /finalize
// does in kube) and it stays, Terminating, until a write removes its last
// metadata finalizer (finalizedByUpdate). It returns the namespace as
// written; ErrConflict means read it again.
func (s *Server) holdNamespace(ctx context.Context, kv storage.KV, cur *doc) (storage.KV, error) {
	cur.setField("spec", map[string]any{})
	markAsDeleting(cur, s.now()) // as kube's store.Delete then does
	value := cur.encode()
	rev, err := s.store.Update(ctx, kv.Key, value, kv.Revision)
	if err != nil {
		return storage.KV{}, err
	}
	out, err := storage.WithResourceVersion(value, rev)
	return storage.KV{Key: kv.Key, Value: out, Revision: rev}, err
}
