package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/finalizer"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/backoff"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// A CRD's deletion is kube-apiserver's (k8s.io/apiextensions-apiserver
// pkg/registry/customresourcedefinition REST.Delete, pkg/controller/
// finalizer CRDFinalizer):
//
//   - the first DELETE does not delete: it sets the deletionTimestamp,
//     adds the customresourcecleanup.apiextensions.k8s.io finalizer and a
//     Terminating condition (True, InstanceDeletionPending), written
//     straight to storage (no strategy, no field manager), and answers the
//     CRD so written (a dry run: as it would be). A DELETE of a CRD being
//     deleted is the generic store's (deleteflow.go).
//   - the finalizer controller then, by status updates through the CRD's
//     /status as kube's loopback client makes them (updateCRDStatus),
//     sets Terminating InstanceDeletionInProgress, deletes every custom
//     resource as kube's DeleteCollection does (their own finalizers
//     honoured), waits until none is left, and in one more status update
//     sets Terminating False (InstanceDeletionCompleted; NeverEstablished
//     for a CRD never established, OverlappingBuiltInResource for one
//     whose storage is a built-in's, whose objects are left alone) and
//     removes its finalizer, which deletes the CRD.
//
// Meanwhile the custom resources are served as kube's handler serves
// them, but for creates (crdResourcesOf, createDoc). Unlike kube's
// controller, which polls every 5 s, serve's follows the custom
// resources' deletions by watch, so a CRD goes as soon as its last
// custom resource does. Like kube's, it gives up waiting after a minute,
// says so in the condition (InstanceDeletionCheck), and starts over.

// crdCleanupWait is how long the finalizer waits for the custom
// resources to go before it says so and starts over, as kube's poll.
var crdCleanupWait = time.Minute

// crdFinalizers runs the finalizer of each CRD being deleted, one
// goroutine per CRD while it has work, for as long as Run's context.
type crdFinalizers struct {
	mu      sync.Mutex
	ctx     context.Context // nil until started
	stopped bool
	wg      sync.WaitGroup
	running map[string]bool
	again   map[string]bool
}

// start lets kick run finalizers until ctx ends; wait (once ctx has
// ended) starts no more and waits for them.
func (f *crdFinalizers) start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctx = ctx
	f.running, f.again = map[string]bool{}, map[string]bool{}
}

func (f *crdFinalizers) wait() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.wg.Wait()
}

// kickCRDFinalizer runs the finalizer of the stored CRD value if it is
// being deleted and holds kube's cleanup finalizer (again, once, if it
// runs already).
func (s *Server) kickCRDFinalizer(value []byte) {
	d, err := decodeDoc(value)
	if err != nil || d.metaString("deletionTimestamp") == "" {
		return
	}
	held := false
	for _, f := range d.finalizers() {
		held = held || f == apiextensionsv1.CustomResourceCleanupFinalizer
	}
	if !held {
		return
	}
	name := d.metaString("name")
	f := &s.crdFin
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx == nil || f.stopped || f.ctx.Err() != nil {
		return // Run's followCRDs kicks it once started
	}
	if f.running[name] {
		f.again[name] = true
		return
	}
	f.running[name] = true
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			s.runCRDFinalizer(f.ctx, name)
			f.mu.Lock()
			if !f.again[name] || f.ctx.Err() != nil {
				delete(f.running, name)
				f.mu.Unlock()
				return
			}
			delete(f.again, name)
			f.mu.Unlock()
		}
	}()
}

// runCRDFinalizer finalizes the CRD name, trying again after an error
// (kube's workqueue requeues it with a growing delay).
func (s *Server) runCRDFinalizer(ctx context.Context, name string) {
	delay := 5 * time.Millisecond
	for ctx.Err() == nil {
		err := s.finalizeCRD(ctx, name)
		if err == nil {
			return
		}
		if ctx.Err() == nil {
			s.log.Warn("crd finalizer", slog.String("crd", name), slog.Any("err", err))
		}
		if backoff.Sleep(ctx, delay) != nil {
			return
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// finalizeCRD is one run of kube's CRDFinalizer.sync on the CRD name.
func (s *Server) finalizeCRD(ctx context.Context, name string) error {
	var uid string
	deleting := func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return crd.DeletionTimestamp != nil && !crd.DeletionTimestamp.IsZero() &&
			apiextensionshelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) &&
			(uid == "" || string(crd.UID) == uid)
	}
	var live bool
	value, err := s.updateCRDStatus(ctx, name, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		live = deleting(crd)
		if !live {
			return false
		}
		uid = string(crd.UID)
		apiextensionshelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type:    apiextensionsv1.Terminating,
			Status:  apiextensionsv1.ConditionTrue,
			Reason:  "InstanceDeletionInProgress",
			Message: "CustomResource deletion is in progress",
		})
		return true
	})
	if errors.Is(err, errNoStatusChange) {
		if !live {
			return nil
		}
		value, err = s.readCRD(ctx, name)
	}
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.applyCRD(value); err != nil {
		s.log.Warn("crd not served", slog.String("crd", name), slog.Any("err", err))
	}
	d, err := decodeDoc(value)
	if err != nil {
		return err
	}
	crd, err := crdDefinition(d)
	if err != nil {
		return err
	}
	var cond apiextensionsv1.CustomResourceDefinitionCondition
	var deleteErr error
	switch {
	case finalizer.OverlappingBuiltInResources()[schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}]:
		cond = apiextensionsv1.CustomResourceDefinitionCondition{
			Type:    apiextensionsv1.Terminating,
			Status:  apiextensionsv1.ConditionFalse,
			Reason:  "OverlappingBuiltInResource",
			Message: "instances overlap with built-in resources in storage",
		}
	case apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established):
		cond, deleteErr = s.deleteCRDInstances(ctx, crd, d)
	default:
		cond = apiextensionsv1.CustomResourceDefinitionCondition{
			Type:    apiextensionsv1.Terminating,
			Status:  apiextensionsv1.ConditionFalse,
			Reason:  "NeverEstablished",
			Message: "resource was never established",
		}
	}
	_, err = s.updateCRDStatus(ctx, name, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		if !deleting(crd) {
			return false
		}
		apiextensionshelpers.SetCRDCondition(crd, cond)
		if deleteErr == nil {
			apiextensionshelpers.CRDRemoveFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer)
		}
		return true
	})
	if deleteErr != nil {
		return deleteErr
	}
	if errors.Is(err, errNoStatusChange) || isNotFound(err) {
		return nil
	}
	return err
}

func isNotFound(err error) bool {
	var st *wire.Status
	return errors.As(err, &st) && st.Code == http.StatusNotFound
}

// readCRD reads the stored CRD name, with its resourceVersion.
func (s *Server) readCRD(ctx context.Context, name string) ([]byte, error) {
	crdRes, _ := s.reg.lookup(groupCRD, "v1", "customresourcedefinitions")
	kv, err := s.store.Get(ctx, crdRes.key("", name))
	if err != nil {
		return nil, storageError(err, crdRes, name)
	}
	return storage.WithResourceVersion(kv.Value, kv.Revision)
}

// deleteCRDInstances is kube's CRDFinalizer.deleteInstances: every custom
// resource of crd (d, as stored) deleted as its store's Delete does
// (finalizers and all, no admission), then a wait until none is left. It
// returns the Terminating condition to write, and an error that makes the
// finalizer start over.
func (s *Server) deleteCRDInstances(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, d *doc) (apiextensionsv1.CustomResourceDefinitionCondition, error) {
	failed := func(reason, msg string, err error) (apiextensionsv1.CustomResourceDefinitionCondition, error) {
		return apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
			Reason: reason, Message: fmt.Sprintf(msg, err),
		}, err
	}
	prefix, ok := crdPrefix(d)
	if !ok {
		return failed("InstanceDeletionFailed", "could not list instances: %v", errors.New("no storage"))
	}
	var res *resource
	for _, v := range crd.Spec.Versions {
		if r, ok := s.reg.lookup(crd.Spec.Group, v.Name, crd.Status.AcceptedNames.Plural); ok && r.crd == crd.Name {
			res = r
			break
		}
	}
	listed := map[string]bool{}
	var rev int64
	opts := storage.ListOptions{Limit: 500}
	for {
		page, err := s.store.List(ctx, prefix, opts)
		if err != nil {
			return failed("InstanceDeletionFailed", "could not list instances: %v", err)
		}
		rev = page.Revision
		for _, kv := range page.Items {
			listed[kv.Key] = true
		}
		if !page.More || len(page.Items) == 0 {
			break
		}
		opts = storage.ListOptions{Limit: 500, Revision: rev, StartKey: page.Items[len(page.Items)-1].Key + "\x00"}
	}
	var deleteErrs []string
	for key := range listed {
		if res == nil {
			// No version served here: nothing reads these objects, so
			// none is held by a finalizer a client could remove.
			if _, err := s.store.Delete(ctx, key, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
				deleteErrs = append(deleteErrs, err.Error())
			}
			continue
		}
		ns, name := "", strings.TrimPrefix(key, prefix)
		if res.namespaced {
			ns, name, _ = strings.Cut(name, "/")
		}
		c := &call{s: s, res: res, ns: ns, name: name, r: internalRequest(ctx, http.MethodDelete), warn: &responseWarnings{}}
		if _, err := c.deleteObject(ctx, name, deleteRequest{}, false); err != nil && !isNotFound(err) {
			deleteErrs = append(deleteErrs, err.Error())
		}
	}
	if len(deleteErrs) > 0 {
		return failed("InstanceDeletionFailed", "could not issue all deletes: %v", errors.New(strings.Join(deleteErrs, ", ")))
	}
	if err := s.waitPrefixEmpty(ctx, prefix, listed, rev); err != nil {
		return failed("InstanceDeletionCheck", "could not confirm zero CustomResources remaining: %v", err)
	}
	return apiextensionsv1.CustomResourceDefinitionCondition{
		Type:    apiextensionsv1.Terminating,
		Status:  apiextensionsv1.ConditionFalse,
		Reason:  "InstanceDeletionCompleted",
		Message: "removed all instances",
	}, nil
}

// waitPrefixEmpty waits, for at most crdCleanupWait, until the keys under
// prefix (left, as of revision rev) are gone, following them by watch.
func (s *Server) waitPrefixEmpty(ctx context.Context, prefix string, left map[string]bool, rev int64) error {
	if len(left) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, crdCleanupWait)
	defer cancel()
	w, err := s.store.Watch(ctx, prefix, rev, false)
	if err != nil {
		return err
	}
	defer w.Close()
	for len(left) > 0 {
		ev, err := w.Next(ctx)
		if err != nil {
			return err
		}
		switch ev.Type {
		case storage.EventPut:
			left[ev.KV.Key] = true
		case storage.EventDelete:
			delete(left, ev.KV.Key)
		}
	}
	return nil
}

// deleteCRD answers a DELETE of a CRD as kube's CRD REST.Delete: its
// preconditions checked in its words; a CRD not yet being deleted is
// marked (deletionTimestamp, kube's cleanup finalizer, Terminating
// InstanceDeletionPending) and answered so, and its finalizer runs; one
// being deleted goes through the generic store's Delete.
func (c *call) deleteCRD(opts deleteRequest) error {
	ctx := c.r.Context()
	key := c.res.key("", c.name)
	dry := len(opts.DryRun) > 0
	for attempt := 0; ; attempt++ {
		kv, err := c.s.store.Get(ctx, key)
		if err != nil {
			return storageError(err, c.res, c.name)
		}
		cur, err := decodeDoc(kv.Value)
		if err != nil {
			return wire.NewInternalError(err)
		}
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != cur.metaString("uid") {
				return wire.NewConflict(c.res.gr(), c.name, fmt.Sprintf(
					"precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, cur.metaString("uid")))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != fmt.Sprint(kv.Revision) {
				return wire.NewConflict(c.res.gr(), c.name, fmt.Sprintf(
					"precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, kv.Revision))
			}
		}
		if cur.metaString("deletionTimestamp") != "" {
			res, err := c.deleteObject(ctx, c.name, opts, dry)
			if err != nil {
				return err
			}
			if res.deleted && !dry {
				c.s.unserveCRD(c.name, kv.Revision+1)
			}
			return c.writeDeleteResult(res, opts)
		}
		if err := c.validateDeleteOf(kv, cur, c.name); err != nil {
			return err
		}
		crd, err := crdDefinition(cur)
		if err != nil {
			return wire.NewInternalError(err)
		}
		next := cur.clone()
		next.setMetaTime("deletionTimestamp", c.s.now())
		if !apiextensionshelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
			next.setFinalizers(append(cur.finalizers(), apiextensionsinternal.CustomResourceCleanupFinalizer))
		}
		apiextensionshelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type:    apiextensionsv1.Terminating,
			Status:  apiextensionsv1.ConditionTrue,
			Reason:  "InstanceDeletionPending",
			Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
		})
		next.setField("status", crd.Status)
		value, err := c.res.toStorage(next.encode())
		if err != nil {
			return err
		}
		if dry {
			out, err := storage.WithResourceVersion(value, kv.Revision)
			if err != nil {
				return err
			}
			return c.writeObject(http.StatusOK, out)
		}
		rev, err := c.s.store.Update(ctx, key, value, kv.Revision)
		if errors.Is(err, storage.ErrConflict) && attempt < 16 {
			continue
		}
		if err != nil {
			return storageError(err, c.res, c.name)
		}
		c.tr.Step("Object marked for deletion")
		stored, err := storage.WithResourceVersion(value, rev)
		if err != nil {
			return err
		}
		if err := c.s.applyCRD(stored); err != nil {
			c.s.log.Warn("crd not served", slog.String("crd", c.name), slog.Any("err", err))
		}
		c.s.kickCRDFinalizer(stored)
		return c.writeObject(http.StatusOK, stored)
	}
}
