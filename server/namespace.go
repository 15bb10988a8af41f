package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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
		c := &call{s: s, res: r, name: ns, r: internalRequest(ctx, http.MethodPost)}
		d := &doc{apiVersion: "v1", kind: "Namespace", meta: map[string]json.RawMessage{}, rest: map[string]json.RawMessage{}}
		d.setMeta("name", ns)
		c.prepareCreate(d)
		if err := c.admit(d, nil); err != nil {
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

// deleteNamespace deletes the namespace c names: it marks it terminating,
// deletes everything in it, then deletes it, and answers the namespace as
// last stored. check (the DeleteOptions preconditions) is run on the
// namespace as it is when marked terminating, in the same compare-and-swap,
// so that nothing is deleted unless it holds. From then on the deletion is
// committed: the final delete only makes sure the namespace is still the
// one marked (same uid), so that a write meanwhile (a status update, say)
// cannot leave it terminating and empty.
func (c *call) deleteNamespace(check func(cur *doc, rev int64) error) error {
	ctx := c.r.Context()
	marked, err := c.s.terminateNamespace(ctx, c.name, check)
	if err != nil {
		return err
	}
	if err := c.s.deleteNamespaceContents(ctx, c.name); err != nil {
		return err
	}
	last, err := c.s.deleteNamespaceObject(ctx, c.name, marked.metaString("uid"))
	c.tr.Step("Object deleted from database")
	if err != nil {
		return err
	}
	return c.writeDeleted(last.Value, marked)
}

// terminateNamespace sets the deletionTimestamp (if unset) and phase
// Terminating of namespace name, so that creates into it fail with 403,
// after check passes on the namespace it rewrites. It returns the
// namespace as written.
func (s *Server) terminateNamespace(ctx context.Context, name string, check func(cur *doc, rev int64) error) (*doc, error) {
	c := &call{s: s, res: s.namespaces(), name: name}
	var marked *doc
	_, err := s.guaranteedUpdateNoRequest(ctx, c, func(d *doc, rev int64) (*doc, error) {
		if err := check(d, rev); err != nil {
			return nil, err
		}
		if d.metaString("deletionTimestamp") == "" {
			d.setMeta("deletionTimestamp", s.now().UTC().Format(time.RFC3339))
		}
		d.setField("status", map[string]string{"phase": "Terminating"})
		marked = d
		return d, nil
	})
	return marked, err
}

// deleteNamespaceContents deletes every namespaced object in ns, of every
// resource served now, custom ones included.
func (s *Server) deleteNamespaceContents(ctx context.Context, ns string) error {
	for _, prefix := range s.reg.namespacedPrefixes(ns) {
		if err := s.deletePrefix(ctx, prefix); err != nil {
			return fmt.Errorf("server: deleting %s: %w", prefix, err)
		}
	}
	s.log.Info("namespace emptied", slog.String("namespace", ns))
	return nil
}

// deleteNamespaceObject deletes namespace name if its uid is still uid,
// whatever its revision, retrying on conflict. A namespace gone, or
// replaced by another of the same name, is 404.
func (s *Server) deleteNamespaceObject(ctx context.Context, name, uid string) (storage.KV, error) {
	r := s.namespaces()
	key := r.key("", name)
	for {
		kv, err := s.store.Get(ctx, key)
		if err != nil {
			return storage.KV{}, storageError(err, r, name)
		}
		cur, err := decodeDoc(kv.Value)
		if err != nil {
			return storage.KV{}, err
		}
		if cur.metaString("uid") != uid {
			return storage.KV{}, wire.NewNotFound(r.gr(), name)
		}
		if len(cur.finalizers()) > 0 {
			held, err := s.holdNamespace(ctx, kv, cur) // finalize.go
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			return held, storageError(err, r, name)
		}
		last, err := s.store.Delete(ctx, key, kv.Revision)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return storage.KV{}, storageError(err, r, name)
		}
		return last, nil
	}
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
