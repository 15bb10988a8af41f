package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// create answers POST on a collection: 201 with the stored object, 409
// AlreadyExists, 404 if the namespace is missing, 403 if it is
// terminating, 422 for invalid metadata.
func (c *call) create() error {
	if err := c.checkFieldValidationParam("CreateOptions"); err != nil {
		return err
	}
	if err := c.checkFieldManagerParam("CreateOptions"); err != nil {
		return err
	}
	d, err := c.decodeBody()
	if err != nil {
		return err
	}
	value, err := c.createDoc(d)
	if err != nil {
		return err
	}
	return c.writeObject(http.StatusCreated, value)
}

// createDoc admits and stores a new object d (a create's body, or the
// result of an apply to an object that does not exist), returning the
// stored value.
func (c *call) createDoc(d *doc) ([]byte, error) {
	c.prepareCreate(d)
	if err := c.admit(d, nil); err != nil {
		return nil, err
	}
	if err := c.admitCustom(d, nil); err != nil {
		return nil, err
	}
	if err := c.manageCustom(d, nil); err != nil { // managedFields (ssa.go)
		return nil, err
	}
	if err := c.webhookValidateCustom(d, nil); err != nil {
		return nil, err
	}
	name := d.metaString("name")
	c.name = name
	if c.res.namespaced {
		if err := c.s.checkNamespaceOpen(c.r.Context(), c.res, c.ns, name); err != nil {
			return nil, err
		}
	}
	value := d.encode()
	c.tr.Step("About to store object in database")
	if isDryRun(c.r) {
		return value, nil
	}
	rev, err := c.s.store.Create(c.r.Context(), c.res.key(c.ns, name), value)
	c.tr.Step("Object stored in database")
	if err != nil {
		return nil, storageError(err, c.res, name)
	}
	stored, err := storage.WithResourceVersion(value, rev)
	if err != nil {
		return nil, err
	}
	c.s.afterWrite(c.res, stored)
	return stored, nil
}

// checkNamespaceOpen: ns exists and is not being deleted.
func (s *Server) checkNamespaceOpen(ctx context.Context, r *resource, ns, name string) error {
	nsRes, _ := s.reg.lookup("", "v1", "namespaces")
	kv, err := s.store.Get(ctx, nsRes.key("", ns))
	if errors.Is(err, storage.ErrNotFound) {
		return wire.NewNotFound(nsRes.gr(), ns)
	}
	if err != nil {
		return storageError(err, nsRes, ns)
	}
	if d, err := decodeDoc(kv.Value); err == nil && d.metaString("deletionTimestamp") != "" {
		return wire.NewForbidden(r.gr(), name,
			"unable to create new content in namespace "+ns+" because it is being terminated")
	}
	return nil
}

// afterWrite lets the server react to its own writes at once (a new CRD is
// served before the create returns) instead of waiting for Run's watch.
func (s *Server) afterWrite(r *resource, stored []byte) {
	if r.crd == "" && r.plural == "customresourcedefinitions" {
		if err := s.applyCRD(stored); err != nil {
			s.log.Warn("crd not served", slog.Any("err", err))
		}
	}
}

func isDryRun(r *http.Request) bool {
	return len(r.URL.Query()["dryRun"]) > 0
}
