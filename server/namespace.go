package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/listwatch/listwatch/storage"
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
		c := &call{s: s, res: r, name: ns}
		d := &doc{apiVersion: "v1", kind: "Namespace", meta: map[string]json.RawMessage{}, rest: map[string]json.RawMessage{}}
		d.setMeta("name", ns)
		c.prepareCreate(d)
		_, err := s.store.Create(ctx, r.key("", ns), d.encode())
		if err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("server: creating namespace %s: %w", ns, err)
		}
	}
	return nil
}

// deleteNamespaceContents marks the namespace terminating (so creates into
// it fail with 403), then deletes every namespaced object in it, of every
// resource served now, custom ones included.
func (s *Server) deleteNamespaceContents(ctx context.Context, ns string) error {
	r := s.namespaces()
	c := &call{s: s, res: r, name: ns, tr: nil}
	_, err := s.guaranteedUpdateNoRequest(ctx, c, func(d *doc) (*doc, error) {
		if d.metaString("deletionTimestamp") == "" {
			d.setMeta("deletionTimestamp", s.now().UTC().Format(time.RFC3339))
		}
		d.setField("status", map[string]string{"phase": "Terminating"})
		return d, nil
	})
	if err != nil {
		return err
	}
	for _, prefix := range s.reg.namespacedPrefixes(ns) {
		if err := s.deletePrefix(ctx, prefix); err != nil {
			return fmt.Errorf("server: deleting %s: %w", prefix, err)
		}
	}
	s.log.Info("namespace emptied", slog.String("namespace", ns))
	return nil
}

// guaranteedUpdateNoRequest rewrites the stored object c names with fn,
// retrying on conflict, for the server's own writes: no admission, the
// server-owned fields are set by fn directly.
func (s *Server) guaranteedUpdateNoRequest(ctx context.Context, c *call, fn func(*doc) (*doc, error)) ([]byte, error) {
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
		next, err := fn(cur)
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
