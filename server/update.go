package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// update answers PUT on an object. With metadata.resourceVersion it is a
// compare-and-swap (409 Conflict when stale); without one it is
// unconditional where the kind's strategy allows it (most built-ins; not
// Leases, PodDisruptionBudgets, custom resources…).
func (c *call) update() error {
	if c.scale {
		return c.updateScale()
	}
	if err := c.checkWriteOptions("UpdateOptions"); err != nil {
		return err
	}
	d, err := c.decodeBody()
	if err != nil {
		return err
	}
	if err := c.checkName(d); err != nil {
		return err
	}
	if err := c.keyError(c.name); err != nil {
		return err
	}
	// As kube's store, in this order once the object is read: the uid
	// the object names is a precondition (another object of the name is
	// a 409, not a change); then, once mutating admission has run, its
	// resourceVersion is read, and pins the revision the update applies
	// to (a 409 when stale, writeRevision); none is an unconditional
	// update, which custom resources refuse (AllowUnconditionalUpdate).
	uid := d.metaString("uid")
	expect, _ := updateRevision(d.metaString("resourceVersion")) // fn reports its error
	for attempt := 0; ; attempt++ {
		stored, err := c.s.guaranteedUpdate(c.r.Context(), c, expect, func(cur *doc) (*doc, error) {
			if err := c.uidPrecondition(uid, cur.metaString("uid")); err != nil {
				return nil, err
			}
			return d.clone(), nil // updateFrom changes what it gets
		})
		if !isNotFoundOf(err, c.name) || !c.allowCreateOnUpdate() || attempt >= 16 {
			if err != nil {
				return err
			}
			return c.writeObject(http.StatusOK, stored)
		}
		// A kind whose strategy allows it (Leases, Services, Events,
		// RBAC roles…) is created by an update of a name that has no
		// object, as kube's store does: the uid precondition against no
		// uid, the resourceVersion parsed (then ignored), and the create
		// authorized as one.
		if err := c.uidPrecondition(uid, ""); err != nil {
			return err
		}
		if _, err := updateRevision(d.metaString("resourceVersion")); err != nil {
			return err
		}
		if err := c.authorizeCreate(); err != nil {
			return err
		}
		value, err := c.createDoc(d.clone())
		if st := (*wire.Status)(nil); errors.As(err, &st) && st.Reason == wire.ReasonAlreadyExists {
			continue // created meanwhile: update it
		}
		if err != nil {
			return err
		}
		return c.writeObject(http.StatusCreated, value)
	}
}

// uidPrecondition is kube's storage precondition of a PUT whose object
// names a uid (an update's, or a Scale's, whose scale REST passes the
// uid on): 409 when the stored object, whose uid is have, is another.
func (c *call) uidPrecondition(uid, have string) error {
	if uid == "" || uid == have {
		return nil
	}
	return wire.NewConflict(c.res.gr(), c.name, fmt.Sprintf(
		"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in object meta: %s",
		c.storageErrorKey(), uid, have))
}

// allowCreateOnUpdate is the AllowCreateOnUpdate of the kind's strategy,
// for an update of the object itself (not of a subresource).
func (c *call) allowCreateOnUpdate() bool {
	t := c.res.typed()
	if t == nil || t.strategy == nil || c.status || c.finalize || c.sub != "" || c.scale {
		return false
	}
	return t.strategy.AllowCreateOnUpdate(c.strategyContext(false))
}

// isNotFoundOf reports whether err is the 404 of the object name.
func isNotFoundOf(err error, name string) bool {
	var st *wire.Status
	return errors.As(err, &st) && st.Code == http.StatusNotFound && st.Details != nil && st.Details.Name == name
}

// updateRevision is the revision an update's resourceVersion pins, read
// as kube's versioner reads it: "" and "0" pin none; what ParseUint
// refuses is kube's plain 500 with ParseUint's message; a number past
// any revision pins one no object has (a 409).
func updateRevision(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, plainError(err)
	}
	return int64(min(n, math.MaxInt64)), nil
}

// newRevision is kube's store's check of the resourceVersion of the
// object an update writes, once the stored object is read and its
// preconditions hold: ParseUint's error is a plain 500; none ("" or "0")
// is an unconditional update where the strategy allows one, else its
// 422. It returns the revision named, 0 for none; the caller compares it
// with the stored one (a 409 when they differ).
func (c *call) newRevision(rv string) (int64, error) {
	n, err := updateRevision(rv)
	if err != nil {
		return 0, err
	}
	if n == 0 && !c.allowUnconditionalUpdate() {
		// kube names the resource where the kind goes (its TODO).
		return 0, invalid(c.res.gr().String(), c.res.group, c.res.plural, c.name, wire.StatusCause{
			Type: "FieldValueInvalid", Field: "metadata.resourceVersion",
			Message: "Invalid value: 0: must be specified for an update"})
	}
	return n, nil
}

// writeRevision is newRevision for rv, the resourceVersion of the object
// an update, patch or apply is about to write over the stored one (at
// revision stored), once mutating admission has run: the revision it
// names, if any (0 for none; returned), must be the stored one (a 409 when
// not).
func (c *call) writeRevision(rv string, stored int64) (int64, error) {
	n, err := c.newRevision(rv)
	if err != nil {
		return 0, err
	}
	if n != 0 && n != stored {
		return n, wire.NewConflict(c.res.gr(), c.name, wire.ConflictModified)
	}
	return n, nil
}

// allowUnconditionalUpdate is the AllowUnconditionalUpdate of the
// strategy that updates the object: false for custom resources, as kube's
// strategy for them.
func (c *call) allowUnconditionalUpdate() bool {
	t := c.res.typed()
	if t == nil || t.strategy == nil {
		return c.res.crd == ""
	}
	return c.updateStrategy(t).AllowUnconditionalUpdate(c.strategyContext(false))
}

// storageErrorKey is the object's key as kube's storage errors name it:
// the etcd key, but in a dry run, which kube checks above its storage
// layer, where keys have no "/registry" prefix yet.
func (c *call) storageErrorKey() string {
	key := c.res.key(c.ns, c.name)
	if isDryRun(c.r) {
		key = strings.TrimPrefix(key, "/registry")
	}
	return key
}

// guaranteedUpdate is the read-modify-write loop of update and patch: read
// the object, let fn compute the new one from it, admit and write it at
// the read revision, and retry from the read when another writer got in
// between — unless the object written pins the revision it replaces (its
// resourceVersion once mutating admission has run; expect, the one a
// Scale was sent with), in which case a mismatch is the client's 409
// Conflict. A dry run reads storage at once.
//
// As kube's GuaranteedUpdate over its watch cache, the first attempt
// starts from the cache's copy of the object, which saves a read of etcd.
// Only a write can show that copy was current: it is conditional on the
// copy's revision, so a stale copy makes it fail and the loop start again
// from storage. An answer without a write from the cache's copy (a no-op,
// a refusal by a precondition, admission or validation) stands if storage
// holds the same revision, as in kube. So every answer rests on a read of
// storage.
func (s *Server) guaranteedUpdate(ctx context.Context, c *call, expect int64, fn func(cur *doc) (*doc, error)) ([]byte, error) {
	key := c.res.key(c.ns, c.name)
	var (
		kv     storage.KV
		cached bool
	)
	// A dry run would answer without writing, which only a read of
	// storage may confirm: it reads storage at once, so that admission
	// runs once, as in kube.
	if p, ok := c.res.reader.(storage.Peeker); ok && !isDryRun(c.r) {
		kv, cached = p.Peek(key)
	}
	fresh := false // kv was read from storage by the last attempt's case
	for attempt := 0; ; attempt++ {
		if !cached && !fresh {
			var err error
			if kv, err = s.store.Get(ctx, key); err != nil {
				return nil, storageError(err, c.res, c.name)
			}
		}
		fresh = false
		stored, err := s.updateFrom(ctx, c, key, expect, kv, cached, fn)
		switch {
		case err == nil:
			return stored, nil
		case cached:
			cached = false
			if errors.Is(err, errWriteConflict) {
				continue
			}
			// Another answer from the cache's copy (a no-op, a
			// precondition, admission, validation) stands, as kube's, if
			// storage holds the same revision: fn (and its webhooks) do
			// not run again.
			cachedRev := kv.Revision
			var gerr error
			if kv, gerr = s.store.Get(ctx, key); gerr != nil {
				return nil, storageError(gerr, c.res, c.name)
			}
			if kv.Revision == cachedRev {
				if errors.Is(err, errFromCache) {
					return kv.Value, nil // no-op: nothing written (noop.go)
				}
				return nil, err
			}
			fresh = true
		case errors.Is(err, errWriteConflict) && attempt < 16:
			// updateFrom said so only for a write whose object pins no
			// revision.
		default:
			return nil, err
		}
	}
}

var (
	// errWriteConflict: another write got in since kv was read.
	errWriteConflict = errors.New("server: object changed since it was read")
	// errFromCache: the attempt would write nothing, from the cache's
	// copy, which storage must confirm first.
	errFromCache = errors.New("server: answer from the cache's copy")
)

// updateFrom is one attempt of guaranteedUpdate from kv, the stored
// object as storage (or, if cached, the watch cache) has it.
func (s *Server) updateFrom(ctx context.Context, c *call, key string, expect int64, kv storage.KV, cached bool, fn func(cur *doc) (*doc, error)) ([]byte, error) {
	current := kv.Value
	if c.res.conv != nil {
		// As kube's store decodes it: in the request's version.
		var err error
		if current, err = c.res.conv.one(key, kv.Revision, kv.Value, c.res.apiVersion()); err != nil {
			return nil, updateReadError(err, kv.Revision)
		}
	} else if c.res.crd != "" {
		// As kube's store decodes it: pruned and defaulted by the schema
		// of the version stored, then, stored in another version
		// (conversion None), pruned by the request's. This is the object
		// patched, and the old object of admission and validation
		// (oldSelf), without the request version's defaults.
		current = c.res.relabel(current)
	}
	cur, err := decodeDoc(current)
	if err != nil {
		return nil, wire.NewInternalError(err)
	}
	// fn first, as kube's store computes the updated object (checking
	// preconditions; admit then runs mutating admission) before it
	// compares resourceVersions (settle).
	next, err := fn(cur)
	if err != nil {
		return nil, err
	}
	if err := c.checkType(next); err != nil {
		return nil, err
	}
	if err := c.checkName(next); err != nil {
		return nil, err
	}
	// pinned: the object written names the revision it replaces, so
	// another write in between is the client's 409, not a retry. The
	// resourceVersion is the mutated object's (settle); a Scale's is read
	// by writeScaled's fn (checkScaleRevision), pinned by the one sent.
	pinned := expect != 0
	settle := func(rv string) error {
		if c.scale {
			return nil
		}
		n, err := c.writeRevision(rv, kv.Revision)
		pinned = n != 0
		return err
	}
	if err := c.admit(next, cur, settle); err != nil {
		return nil, err
	}
	if err := c.admitCustom(next, cur); err != nil {
		return nil, err
	}
	if err := c.webhookValidateCustom(next, cur); err != nil {
		return nil, err
	}
	value := next.encode()
	obj := next.takeView() // the typed object value encodes, if any
	if c.finalizedByUpdate(next, cur) {
		stored, err := s.deleteFinalized(ctx, c, kv.Revision, next)
		if errors.Is(err, storage.ErrConflict) && (!pinned || cached) {
			return nil, errWriteConflict
		}
		if err != nil {
			return nil, storageError(err, c.res, c.name)
		}
		c.awaitWrite(kv.Revision, true) // deleted as it stood at kv.Revision
		return stored, nil
	}
	// In the storage version, as kube's store encodes it after deciding
	// on a delete.
	if value, err = c.res.toStorage(value); err != nil {
		return nil, err
	}
	if unchangedWrite(value, kv) || c.res.conv != nil && sameObject(value, kv) {
		if cached {
			return nil, errFromCache
		}
		return kv.Value, nil // no-op: nothing written (noop.go)
	}
	if isDryRun(c.r) { // never from the cache's copy (guaranteedUpdate)
		return storage.WithResourceVersion(value, kv.Revision)
	}
	c.tr.Step("About to store object in database")
	rev, err := s.store.Update(ctx, key, value, kv.Revision)
	if errors.Is(err, storage.ErrConflict) && (!pinned || cached) {
		return nil, errWriteConflict
	}
	if err != nil {
		return nil, storageError(err, c.res, c.name)
	}
	c.tr.Step("Object stored in database")
	stored, err := storage.WithResourceVersion(value, rev)
	if err != nil {
		return nil, err
	}
	c.respondWith(obj, rev, stored)
	s.afterWrite(c.res, stored)
	c.awaitWrite(rev, false)
	return stored, nil
}

// checkName is kube's check of a written object's name against the URL's.
func (c *call) checkName(d *doc) error {
	switch n := d.metaString("name"); n {
	case c.name:
		return nil
	case "":
		return wire.NewBadRequest("the name of the object (" + c.name + " based on URL) was undeterminable: name must be provided")
	default:
		return wire.NewBadRequest("the name of the object (" + n + ") does not match the name on the URL (" + c.name + ")")
	}
}
