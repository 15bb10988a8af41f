package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// defaultNamespaces exist on every server; Run creates those missing.
var defaultNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

func (s *Server) namespaces() *resource {
	r, _ := s.reg.lookup("", "v1", "namespaces")
	return r
}

// bootstrapNamespaces creates the default namespaces that do not exist.
// Several servers may race to do it; losing the race (ErrExists) is fine.
func (s *Server) bootstrapNamespaces(ctx context.Context) error {
	r := s.namespaces()
	for _, ns := range defaultNamespaces {
		req := internalRequest(ctx, http.MethodPost)
		req.Header.Set("User-Agent", "kube-apiserver/"+GitVersion) // the managedFields' manager, as kube's loopback client
		c := &call{s: s, res: r, name: ns, r: req}
		d := &doc{apiVersion: "v1", kind: "Namespace", meta: map[string]json.RawMessage{}, rest: map[string]json.RawMessage{}}
		d.setMeta("name", ns)
		if err := c.admit(d, nil, nil); err != nil {
			return fmt.Errorf("server: creating namespace %s: %w", ns, err)
		}
		_, err := s.store.Create(ctx, r.key("", ns), d.encode())
		if err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("server: creating namespace %s: %w", ns, err)
		}
	}
	return nil
}

// immortalNamespaces may not be deleted, as kube's NamespaceLifecycle
// admission has it (kube-node-lease may).
var immortalNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// errImmortal is kube's 403 for deleting an immortal namespace.
func errImmortal(r *resource, name string) error {
	return wire.NewForbidden(r.gr(), name, "this namespace may not be deleted")
}

// deleteNamespace answers DELETE of namespace c names (cur, read at rev),
// as kube's namespace storage does. The first DELETE only marks it:
// deletionTimestamp and phase Terminating, after check (the DeleteOptions
// preconditions) passes on the namespace it rewrites, and answers it with
// 200; the namespace controller then empties it and removes the
// kubernetes finalizer through /finalize. A DELETE of a namespace already
// terminating answers it as it is while finalizers remain, and removes it
// once spec.finalizers and metadata.finalizers are both empty.
func (c *call) deleteNamespace(cur *doc, rev int64, dryRun bool, check func(cur *doc, rev int64) error) error {
	ctx := c.r.Context()
	if cur.metaString("deletionTimestamp") == "" {
		if dryRun {
			markTerminating(cur, c.s.now())
			return c.writeObject(http.StatusOK, cur.encodeWithRV(strconv.FormatInt(rev, 10)))
		}
		stored, err := c.s.terminateNamespace(ctx, c.name, check)
		if err != nil {
			return err
		}
		c.tr.Step("Object marked for deletion")
		return c.writeObject(http.StatusOK, stored)
	}
	if err := check(cur, rev); err != nil {
		return err
	}
	if !namespaceFinalized(cur) || dryRun {
		return c.writeObject(http.StatusOK, cur.encodeWithRV(strconv.FormatInt(rev, 10)))
	}
	last, err := c.s.store.Delete(ctx, c.res.key("", c.name), rev)
	c.tr.Step("Object deleted from database")
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return wire.NewConflict(c.res.gr(), c.name, wire.ConflictModified)
		}
		return storageError(err, c.res, c.name)
	}
	return c.writeDeleted(last.Value, cur)
}

// markTerminating sets the deletionTimestamp (if unset) and phase
// Terminating of namespace d.
func markTerminating(d *doc, now time.Time) {
	if d.metaString("deletionTimestamp") == "" {
		d.setMeta("deletionTimestamp", now.UTC().Format(time.RFC3339))
	}
	var status map[string]json.RawMessage
	if !d.field("status", &status) || status == nil {
		status = map[string]json.RawMessage{}
	}
	status["phase"] = json.RawMessage(`"Terminating"`)
	d.setField("status", status)
}

// terminateNamespace marks namespace name terminating, so that creates
// into it fail with 403, after check passes on the namespace it rewrites.
// It returns the namespace as stored.
func (s *Server) terminateNamespace(ctx context.Context, name string, check func(cur *doc, rev int64) error) ([]byte, error) {
	c := &call{s: s, res: s.namespaces(), name: name}
	return s.guaranteedUpdateNoRequest(ctx, c, func(d *doc, rev int64) (*doc, error) {
		if err := check(d, rev); err != nil {
			return nil, err
		}
		markTerminating(d, s.now())
		return d, nil
	})
}

// guaranteedUpdateNoRequest rewrites the stored object c names with fn,
// given the object and its revision, retrying on conflict, for the
// server's own writes: no admission, the server-owned fields are set by fn
// directly.
func (s *Server) guaranteedUpdateNoRequest(ctx context.Context, c *call, fn func(*doc, int64) (*doc, error)) ([]byte, error) {
	key := c.res.key(c.ns, c.name)
	for {
		kv, err := s.store.Get(ctx, key)
		if err != nil {
			return nil, storageError(err, c.res, c.name)
		}
		cur, err := decodeDoc(kv.Value)
		if err != nil {
			return nil, err
		}
		next, err := fn(cur, kv.Revision)
		if err != nil {
			return nil, err
		}
		value := next.encode()
		rev, err := s.store.Update(ctx, key, value, kv.Revision)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, storageError(err, c.res, c.name)
		}
		return storage.WithResourceVersion(value, rev)
	}
}
