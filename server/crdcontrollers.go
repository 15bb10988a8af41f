package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"time"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"

	"github.com/listwatch/listwatch/server/storage"
)

// A CRD's status.acceptedNames and its NamesAccepted and Established
// conditions are written as kube-apiserver's apiextensions controllers
// write them: not inside the client's write, whose strategy leaves a new
// CRD's status empty but for storedVersions (and an update's as it was),
// but by status updates after it, each through the CRD's /status with
// kube's status strategy and field manager, by kube-apiserver's loopback
// client, so managedFields record them for manager "kube-apiserver",
// operation Update, subresource status. The naming controller's
// (NamesAccepted, Established Installing or NotAccepted, the accepted
// names) comes first, then the establishing controller's (Established
// True). Watchers see kube's sequence: the client's ADDED or MODIFIED,
// then one MODIFIED for each. Unlike kube, where the controllers run a
// moment later, serve writes them before it answers the client's write,
// so a CRD is served by the time its create is answered, as before.

// loopbackUserAgent is the User-Agent of kube-apiserver's loopback
// client, whose writes its controllers make.
var loopbackUserAgent = "kube-apiserver/" + GitVersion

// errNoStatusChange ends a controller's status update that has nothing to
// write.
var errNoStatusChange = errors.New("no status change")

// settleCRD runs kube's naming and establishing controllers on the CRD
// just written (stored, with its resourceVersion), serving each version
// of it they store.
func (s *Server) settleCRD(stored []byte) {
	if err := s.applyCRD(stored); err != nil {
		s.log.Warn("crd not served", slog.Any("err", err))
	}
	d, err := decodeDoc(stored)
	if err != nil {
		return
	}
	name := d.metaString("name")
	// Not the request's context: the client may go once answered, the
	// controllers' writes are the server's.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	steps := []func(*apiextensionsv1.CustomResourceDefinition) bool{
		func(crd *apiextensionsv1.CustomResourceDefinition) bool {
			return namingStatus(crd, s.reg.usedNames(crd.Spec.Group, crd.Name))
		},
		establishingStatus,
	}
	for _, step := range steps {
		value, err := s.updateCRDStatus(ctx, name, step)
		if errors.Is(err, errNoStatusChange) {
			continue
		}
		if err != nil {
			s.log.Warn("crd status", slog.String("crd", name), slog.Any("err", err))
			return
		}
		if err := s.applyCRD(value); err != nil {
			s.log.Warn("crd not served", slog.String("crd", name), slog.Any("err", err))
		}
	}
}

// updateCRDStatus is a controller's UpdateStatus of the stored CRD name:
// change sets its status (false: nothing to write); the write goes
// through kube's status strategy, admission and field manager as a PUT of
// /status by kube-apiserver's loopback client. It returns the stored
// value, errNoStatusChange when there was nothing to write.
func (s *Server) updateCRDStatus(ctx context.Context, name string, change func(*apiextensionsv1.CustomResourceDefinition) bool) ([]byte, error) {
	crdRes, ok := s.reg.lookup(groupCRD, "v1", "customresourcedefinitions")
	if !ok {
		return nil, errors.New("customresourcedefinitions not served")
	}
	r := internalRequest(ctx, http.MethodPut)
	r.Header.Set("User-Agent", loopbackUserAgent)
	c := &call{s: s, res: crdRes, name: name, r: r, status: true, warn: &responseWarnings{}}
	for {
		var (
			finalized *doc
			finalRev  int64
		)
		value, err := s.guaranteedUpdateNoRequest(ctx, c, func(cur *doc, rev int64) (*doc, error) {
			crd, err := crdDefinition(cur)
			if err != nil {
				return nil, err
			}
			before := crd.DeepCopy()
			if !change(crd) || equality.Semantic.DeepEqual(before.Status, crd.Status) &&
				equality.Semantic.DeepEqual(before.Finalizers, crd.Finalizers) {
				return nil, errNoStatusChange
			}
			next := cur.clone()
			next.setField("status", crd.Status)
			// kube's CRD status strategy keeps the finalizers sent
			// (ResetObjectMetaForStatus of the new object onto itself):
			// its finalizer controller removes its own by UpdateStatus.
			next.setFinalizers(crd.Finalizers)
			if err := c.admit(next, cur, func(string) error { return nil }); err != nil {
				return nil, err
			}
			if c.finalizedByUpdate(next, cur) {
				finalized, finalRev = next, rev
				return nil, errFinalizedByUpdate
			}
			value, err := crdRes.toStorage(next.encode())
			if err != nil {
				return nil, err
			}
			return decodeDoc(value)
		})
		if !errors.Is(err, errFinalizedByUpdate) {
			return value, err
		}
		// The last finalizer removed from a CRD being deleted: kube's
		// store deletes it instead (ShouldDeleteDuringUpdate). It is
		// served no more before it goes, so that whoever sees it gone
		// finds its resources gone too; served again if it stays. It is
		// unserved as of the revision after finalRev: the CRD's watch
		// still has finalRev's event to apply (a CRD served), which must
		// not serve it again, opening a reader only to close it at the
		// delete (TestRegistryOwnsReaders, under load).
		s.unserveCRD(name, finalRev+1)
		value, err = s.deleteFinalized(ctx, c, finalRev, finalized)
		if err != nil {
			if cur, rerr := s.readCRD(ctx, name); rerr == nil {
				_ = s.applyCRDAsOf(cur, finalRev+1)
			}
		}
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, storageError(err, crdRes, name)
		}
		return value, nil
	}
}

// errFinalizedByUpdate: a status update removed the last finalizer of a
// CRD being deleted, which deletes it.
var errFinalizedByUpdate = errors.New("finalized by update")

// namingStatus is what kube's naming controller (NamingConditionController)
// writes into crd's status, given the names used in its group by others:
// the accepted names and the NamesAccepted and Established conditions;
// false when it writes nothing (the names asked for are those accepted,
// or neither they nor the condition would change).
func namingStatus(crd *apiextensionsv1.CustomResourceDefinition, used usedNames) bool {
	if equality.Semantic.DeepEqual(crd.Spec.Names, crd.Status.AcceptedNames) {
		return false
	}
	accepted, namesCond := acceptNames(crdNamesOf(crd.Spec.Names), crdNamesOf(crd.Status.AcceptedNames), used)
	names := apiextensionsv1.CustomResourceDefinitionNames{
		Plural: accepted.Plural, Singular: accepted.Singular, ShortNames: accepted.ShortNames,
		Kind: accepted.Kind, ListKind: accepted.ListKind, Categories: accepted.Categories,
	}
	naming := apiextensionsv1.CustomResourceDefinitionCondition{
		Type:    apiextensionsv1.NamesAccepted,
		Status:  apiextensionsv1.ConditionStatus(namesCond.Status),
		Reason:  namesCond.Reason,
		Message: namesCond.Message,
	}
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type:    apiextensionsv1.Established,
		Status:  apiextensionsv1.ConditionFalse,
		Reason:  "NotAccepted",
		Message: "not all names are accepted",
	}
	if old := apiextensionshelpers.FindCRDCondition(crd, apiextensionsv1.Established); old != nil {
		established = *old
	}
	if established.Status != apiextensionsv1.ConditionTrue && naming.Status == apiextensionsv1.ConditionTrue {
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type:    apiextensionsv1.Established,
			Status:  apiextensionsv1.ConditionFalse,
			Reason:  "Installing",
			Message: "the initial names have been accepted",
		}
	}
	if reflect.DeepEqual(crd.Status.AcceptedNames, names) &&
		apiextensionshelpers.IsCRDConditionEquivalent(&naming, apiextensionshelpers.FindCRDCondition(crd, apiextensionsv1.NamesAccepted)) {
		return false
	}
	crd.Status.AcceptedNames = names
	apiextensionshelpers.SetCRDCondition(crd, naming)
	apiextensionshelpers.SetCRDCondition(crd, established)
	return true
}

// establishingStatus is what kube's establishing controller writes into
// crd's status: Established True once its names are accepted (False,
// InvalidCABundle, for a conversion webhook whose caBundle is invalid);
// false when it writes nothing.
func establishingStatus(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) ||
		apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		return false
	}
	cond := apiextensionsv1.CustomResourceDefinitionCondition{
		Type:    apiextensionsv1.Established,
		Status:  apiextensionsv1.ConditionTrue,
		Reason:  "InitialNamesAccepted",
		Message: "the initial names have been accepted",
	}
	if cv := crd.Spec.Conversion; cv != nil && cv.Webhook != nil && cv.Webhook.ClientConfig != nil &&
		len(webhook.ValidateCABundle(field.NewPath(""), cv.Webhook.ClientConfig.CABundle)) > 0 {
		cond = apiextensionsv1.CustomResourceDefinitionCondition{
			Type:    apiextensionsv1.Established,
			Status:  apiextensionsv1.ConditionFalse,
			Reason:  "InvalidCABundle",
			Message: "The conversion webhook CABundle is invalid",
		}
	}
	apiextensionshelpers.SetCRDCondition(crd, cond)
	return true
}

func crdNamesOf(n apiextensionsv1.CustomResourceDefinitionNames) crdNames {
	return crdNames{Plural: n.Plural, Singular: n.Singular, ShortNames: n.ShortNames,
		Kind: n.Kind, ListKind: n.ListKind, Categories: n.Categories}
}
