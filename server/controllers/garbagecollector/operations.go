package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// errNamespacedOwnerOfClusterScoped: a cluster-scoped object names a
// namespaced owner, which cannot be looked up; retrying cannot fix it.
var errNamespacedOwnerOfClusterScoped = errors.New("garbagecollector: cluster-scoped objects cannot refer to namespaced owners")

// conflictRetries bounds the read-modify-write loops, as client-go's
// retry.DefaultBackoff (5 steps) does for kube's GC.
const conflictRetries = 5

// resource returns the client of the collection id lives in.
func (c *Controller) resource(id objectReference) (*client.Resource[*object.Unstructured], error) {
	mp, err := c.mapper.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return nil, err
	}
	r := client.NewResource[*object.Unstructured](c.client, mp.gvr)
	if mp.namespaced {
		if id.Namespace == "" {
			return nil, errNamespacedOwnerOfClusterScoped
		}
		r = r.Namespace(id.Namespace)
	}
	return r, nil
}

// getObject reads id's object from the server.
func (c *Controller) getObject(ctx context.Context, id objectReference) (*object.Unstructured, error) {
	r, err := c.resource(id)
	if err != nil {
		return nil, err
	}
	return r.Get(ctx, id.Name)
}

// deleteObject deletes id with preconditions on its uid and, if given,
// resourceVersion. When only the resourceVersion conflicts and the
// ownerReferences are unchanged, it deletes again without it, so that
// unrelated writes cannot starve collection (as kube's deleteObject).
func (c *Controller) deleteObject(ctx context.Context, id objectReference, resourceVersion string, owners []map[string]any, policy string) error {
	r, err := c.resource(id)
	if err != nil {
		return err
	}
	uid := id.UID
	pre := &wire.Preconditions{UID: &uid}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	_, err = r.Delete(ctx, id.Name, wire.DeleteOptions{Preconditions: pre, PropagationPolicy: &policy})
	if err == nil {
		c.metrics.deleted(policy)
		return nil
	}
	if client.IsConflict(err) && resourceVersion != "" {
		live, liveErr := r.Get(ctx, id.Name)
		if client.IsNotFound(liveErr) {
			return liveErr
		}
		if liveErr == nil && live.GetUID() == id.UID && live.GetResourceVersion() != resourceVersion {
			if cur, _ := rawOwners(live); reflect.DeepEqual(cur, owners) {
				return c.deleteObject(ctx, id, "", nil, policy)
			}
		}
	}
	return err
}

// updateMeta reads id, lets edit change its metadata, and writes the change
// with a merge patch carrying the read resourceVersion, retrying on
// conflict. edit returns nil to write nothing. A missing object, or one
// with another uid, is left alone.
func (c *Controller) updateMeta(ctx context.Context, id objectReference, edit func(u *object.Unstructured) map[string]any) error {
	r, err := c.resource(id)
	if err != nil {
		return err
	}
	for range conflictRetries {
		live, err := r.Get(ctx, id.Name)
		if client.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if live.GetUID() != id.UID {
			return nil
		}
		md := edit(live)
		if md == nil {
			return nil
		}
		md["resourceVersion"] = live.GetResourceVersion()
		body, err := json.Marshal(map[string]any{"metadata": md})
		if err != nil {
			return err
		}
		_, err = r.Patch(ctx, id.Name, client.MergePatch, body)
		if client.IsNotFound(err) {
			return nil
		}
		if !client.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("garbagecollector: updating %s: still conflicting after %d attempts", id, conflictRetries)
}

// removeOwnerRefs drops the references to uids from id's ownerReferences.
func (c *Controller) removeOwnerRefs(ctx context.Context, id objectReference, uids ...string) error {
	return c.updateMeta(ctx, id, func(u *object.Unstructured) map[string]any {
		refs, _ := rawOwners(u)
		kept := make([]any, 0, len(refs))
		for _, r := range refs {
			if !slices.Contains(uids, ownerFromRaw(r).UID) {
				kept = append(kept, r)
			}
		}
		if len(kept) == len(refs) {
			return nil
		}
		if len(kept) == 0 {
			return map[string]any{"ownerReferences": nil}
		}
		return map[string]any{"ownerReferences": kept}
	})
}

// unblockOwnerRefs sets blockOwnerDeletion=false on every blocking
// reference of id, to break a foreground deletion cycle.
func (c *Controller) unblockOwnerRefs(ctx context.Context, id objectReference) error {
	return c.updateMeta(ctx, id, func(u *object.Unstructured) map[string]any {
		refs, _ := rawOwners(u)
		out := make([]any, 0, len(refs))
		changed := false
		for _, r := range refs {
			if b, _ := r["blockOwnerDeletion"].(bool); b {
				r = cloneMap(r)
				r["blockOwnerDeletion"] = false
				changed = true
			}
			out = append(out, r)
		}
		if !changed {
			return nil
		}
		return map[string]any{"ownerReferences": out}
	})
}

// removeFinalizer drops finalizer f from id.
func (c *Controller) removeFinalizer(ctx context.Context, id objectReference, f string) error {
	return c.updateMeta(ctx, id, func(u *object.Unstructured) map[string]any {
		m := metaOf(u)
		if !m.hasFinalizer(f) {
			c.log.Debug("finalizer already removed from object", "finalizer", f, "object", id)
			return nil
		}
		kept := make([]any, 0, len(m.Finalizers))
		for _, x := range m.Finalizers {
			if x != f {
				kept = append(kept, x)
			}
		}
		if len(kept) == 0 {
			return map[string]any{"finalizers": nil}
		}
		return map[string]any{"finalizers": kept}
	})
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
