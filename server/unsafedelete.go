package server

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// A DELETE whose options set ignoreStoreReadErrorWithClusterBreakingPotential
// asks for kube's unsafe deletion of an object its storage cannot read
// (k8s.io/apiserver handlers/delete.go and registry/generic/registry
// corrupt_obj_deleter.go, behind the AllowUnsafeMalformedObjectDeletion
// feature, on by default in v1.37). It never deletes a readable object:
// that is a 409. Only an object that does not decode, or a custom
// resource the conversion webhook cannot convert to the version asked
// for, is deleted, with no preconditions, finalizers or admission. The
// user needs the "unsafe-delete-ignore-read-errors" verb on it besides
// "delete". A resource whose kube REST has no such deleter (namespaces,
// RBAC's four) refuses with a 500, and a deletecollection with a 422.

// unsafeDeleteVerb is the verb kube authorizes an unsafe delete with.
const unsafeDeleteVerb = "unsafe-delete-ignore-read-errors"

// noCorruptObjectDeleter lists the resources ("group/plural") whose kube
// REST implementation offers no unsafe deleter.
var noCorruptObjectDeleter = map[string]bool{
	"/namespaces":               true,
	groupRBAC + "/clusterroles": true, groupRBAC + "/clusterrolebindings": true,
	groupRBAC + "/roles": true, groupRBAC + "/rolebindings": true,
}

// unsafeDelete answers a DELETE with opts.unsafe, as kube's handler and
// its corrupt object deleter do.
func (c *call) unsafeDelete(opts deleteRequest) error {
	if noCorruptObjectDeleter[c.res.group+"/"+c.res.plural] {
		return kubeStatus(apierrors.NewInternalError(errors.New("no unsafe deleter provided, can not honor ignoreStoreReadErrorWithClusterBreakingPotential")))
	}
	if err := c.authorizeUnsafeDelete(); err != nil {
		return err
	}
	// kube's deleter builds the object's key now.
	if err := c.keyError(c.name); err != nil {
		return err
	}
	ctx := c.r.Context()
	key := c.res.key(c.ns, c.name)
	for attempt := 0; ; attempt++ {
		kv, err := c.s.store.Get(ctx, key)
		if err != nil {
			return storageError(err, c.res, c.name)
		}
		corrupt, err := c.unreadable(kv)
		if err != nil {
			return err
		}
		if !corrupt {
			return wire.NewConflict(c.res.gr(), c.name, fmt.Sprintf(
				"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: unsafe deletion is not allowed because the object is decodable from storage", key))
		}
		if len(opts.DryRun) > 0 {
			break
		}
		last, err := c.s.store.Delete(ctx, key, kv.Revision)
		if errors.Is(err, storage.ErrConflict) && attempt < 16 {
			continue // written meanwhile: read it again, as kube's delete does
		}
		if err != nil {
			return storageError(err, c.res, c.name)
		}
		c.tr.Step("Object deleted from database")
		c.s.afterDelete(key, last.Value)
		c.awaitWrite(last.Revision, true)
		break
	}
	// kube's deleter returns no object: its handler's Status names the
	// object and its kind.
	st := wire.NewSuccess()
	st.Code = http.StatusOK
	st.Details = &wire.StatusDetails{Name: c.name, Kind: c.res.kind}
	return c.writeStatus(http.StatusOK, st)
}

// unreadable reports whether kube's storage could not read kv: its value
// does not decode, or a custom resource's conversion webhook cannot
// convert it to the request's version (kube's store decodes it so).
func (c *call) unreadable(kv storage.KV) (bool, error) {
	if _, err := decodeDoc(kv.Value); err != nil {
		return true, nil
	}
	if c.res.conv == nil {
		return false, nil
	}
	_, err := c.res.conv.fresh(kv.Key, kv.Revision, kv.Value, c.res.apiVersion())
	var ce *convError
	switch {
	case errors.As(err, &ce):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, nil
}

// authorizeUnsafeDelete is kube's second authorization of an unsafe
// delete: the user must be allowed the unsafe verb on the object too.
func (c *call) authorizeUnsafeDelete() error {
	if c.s.authz == nil {
		return nil
	}
	_, as, d, reason, err := c.authorizeAs(unsafeDeleteVerb)
	if as == nil {
		return err
	}
	gr := schema.GroupResource{Group: c.res.group, Resource: c.res.plural}
	switch {
	case d == auth.DecisionAllow:
		return nil
	case err != nil:
		return kubeStatus(apierrors.NewForbidden(gr, c.name, fmt.Errorf("error while checking permission for %q, %w", unsafeDeleteVerb, err)))
	}
	return kubeStatus(apierrors.NewForbidden(gr, c.name, fmt.Errorf("not permitted to do %q, reason: %s", unsafeDeleteVerb, reason)))
}

// errUnsafeDeleteCollection is kube's 422 for a deletecollection with
// ignoreStoreReadErrorWithClusterBreakingPotential.
func errUnsafeDeleteCollection() error {
	return kubeStatus(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", field.ErrorList{
		field.Invalid(field.NewPath("ignoreStoreReadErrorWithClusterBreakingPotential"), true,
			"is not allowed with DELETECOLLECTION, try again after removing the option"),
	}))
}
