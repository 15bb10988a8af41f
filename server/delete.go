package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// delete answers DELETE on an object. Preconditions (uid,
// resourceVersion) from the DeleteOptions body are checked against the
// current object, and a failed one is a 409 Conflict. Deleting a
// namespace marks it Terminating (namespace.go: the namespace controller
// empties it); deleting a CRD marks it for its finalizer, which deletes
// its custom resources and then the CRD (crdfinalizer.go). As
// kube-apiserver answers, the response is the object while it still
// exists (finalizers, a grace period; namespaces and CRDs always), the
// deleted object for the built-ins whose kube store returns it
// (returnsDeleted: pods, services…), and otherwise, custom resources
// included, a Success Status naming the object. The namespaces
// default, kube-system and kube-public may not be deleted (403).
func (c *call) delete() error {
	opts, err := c.deleteOptions()
	if err != nil {
		return err
	}
	if opts.unsafe {
		return c.unsafeDelete(opts) // unsafedelete.go
	}
	if err := c.keyError(c.name); err != nil {
		return err
	}
	isNamespace := c.res.group == "" && c.res.plural == "namespaces"
	if isNamespace && immortalNamespaces[c.name] {
		// kube's admission refuses before anything is read, dry run too.
		return errImmortal(c.res, c.name)
	}
	if !isNamespace && !c.res.isCRDs() {
		// Finalizers, graceful deletion and propagation (deleteflow.go).
		res, err := c.deleteObject(c.r.Context(), c.name, opts, len(opts.DryRun) > 0)
		if err != nil {
			return err
		}
		if res.deleted {
			c.awaitWrite(res.rev, true) // 0 (no wait) when dry or deleted by another
		} else {
			c.awaitWrite(res.marked, false)
		}
		return c.writeDeleteResult(res, opts)
	}
	if c.res.isCRDs() {
		return c.deleteCRD(opts) // crdfinalizer.go
	}
	// A namespace (deleteNamespace, namespace.go).
	ctx := c.r.Context()
	c.s.nsDeleted.add(c.name)
	key := c.res.key(c.ns, c.name)
	kv, err := c.s.store.Get(ctx, key)
	if err != nil {
		return storageError(err, c.res, c.name)
	}
	cur, err := decodeDoc(kv.Value)
	if err != nil {
		return wire.NewInternalError(err)
	}
	if err := c.checkPreconditions(opts.DeleteOptions, cur, kv.Revision); err != nil {
		return err
	}
	if err := c.validateDeleteOf(kv, cur, c.name); err != nil {
		return err
	}
	// As kube, the namespace read here is the one to delete: its uid is
	// a precondition of marking it terminating, so one deleted and
	// created again meanwhile is left alone.
	pre := wire.Preconditions{UID: new(cur.metaString("uid"))}
	if p := opts.Preconditions; p != nil {
		pre = *p
		if pre.UID == nil {
			pre.UID = new(cur.metaString("uid"))
		}
	}
	opts.Preconditions = &pre
	return c.deleteNamespace(cur, kv.Revision, len(opts.DryRun) > 0, func(d *doc, rev int64) error { return c.checkPreconditions(opts.DeleteOptions, d, rev) })
}

// returnsDeleted lists the built-ins whose DELETE answers the deleted
// object rather than a Status, as their kube stores set
// ReturnDeletedObject.
// Keys are "group/plural" (k8s.io/kubernetes/pkg/registry/*/storage).
var returnsDeleted = map[string]bool{
	"/namespaces": true, "/pods": true, "/services": true, "/serviceaccounts": true,
	"/persistentvolumes": true, "/persistentvolumeclaims": true, "/podtemplates": true, "/resourcequotas": true,
	"resource.k8s.io/deviceclasses": true, "resource.k8s.io/resourceclaims": true,
	"resource.k8s.io/resourceclaimtemplates": true, "resource.k8s.io/resourceslices": true,
	"storage.k8s.io/csidrivers": true, "storage.k8s.io/csinodes": true, "storage.k8s.io/storageclasses": true,
	"storage.k8s.io/volumeattachments": true, "storage.k8s.io/volumeattributesclasses": true,
}

func (c *call) writeDeleted(value []byte, cur *doc) error {
	return c.writeDeletedCode(http.StatusOK, value, cur)
}

func (c *call) writeDeletedCode(code int, value []byte, cur *doc) error {
	if returnsDeleted[c.res.group+"/"+c.res.plural] || c.res.isCRDs() {
		return c.writeObject(code, value)
	}
	st := wire.NewSuccess()
	st.Details = &wire.StatusDetails{Name: c.name, Group: c.res.group, Kind: c.res.plural, UID: cur.metaString("uid")}
	return c.writeStatus(code, st)
}

// writeStatus writes a successful request's Status, in protobuf when
// asked for, else in JSON: in the media type of the answer negotiated
// (output), as kube's handlers pass a Status through the transformation
// asked for, so partial metadata asked for in protobuf is a protobuf
// Status too (an eviction's, a binding's).
func (c *call) writeStatus(code int, st *wire.Status) error {
	proto := errorMedia(c.r.Header.Get("Accept")) == mediaProto
	if out, err := c.output(); err == nil {
		proto = out.proto
	}
	if proto {
		b, err := protoStatus(st)
		if err != nil {
			return err
		}
		writeBody(c.w, code, mediaProto, b)
		return nil
	}
	writeJSON(c.w, code, st)
	return nil
}

// deleteOptions reads a DELETE's options as kube's handlers do: from the
// body if there is one (decoded by meta's codecs: any version of
// DeleteOptions they know, JSON, YAML or protobuf), else from the query;
// then kube's validation of them.
func (c *call) deleteOptions() (deleteRequest, error) {
	var o deleteRequest
	b, err := c.readBody()
	if err != nil {
		return o, err
	}
	ko := &metav1.DeleteOptions{}
	if len(b) > 0 {
		ct := c.r.Header.Get("Content-Type")
		typ, _ := parseMediaRange(ct)
		if typ == "" {
			typ = "application/json"
		}
		info, ok := runtime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), typ)
		if !ok {
			return o, unsupportedBody()
		}
		def := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		obj, _, err := metainternalversionscheme.Codecs.DecoderToVersion(info.Serializer, def.GroupVersion()).Decode(b, &def, ko)
		if err != nil {
			return o, wire.NewBadRequest(err.Error())
		}
		if obj != ko {
			return o, wire.NewBadRequest("decoded object cannot be converted to DeleteOptions")
		}
	} else if err := metainternalversionscheme.ParameterCodec.DecodeParameters(c.r.URL.Query(), metav1.SchemeGroupVersion, ko); err != nil {
		return o, wire.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidateDeleteOptions(ko); len(errs) > 0 {
		return o, kubeStatus(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs))
	}
	o.GracePeriodSeconds, o.DryRun, o.OrphanDependents = ko.GracePeriodSeconds, ko.DryRun, ko.OrphanDependents
	o.unsafe = ko.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *ko.IgnoreStoreReadErrorWithClusterBreakingPotential
	if p := ko.PropagationPolicy; p != nil {
		o.PropagationPolicy = (*string)(p)
	}
	if p := ko.Preconditions; p != nil {
		o.Preconditions = &wire.Preconditions{UID: (*string)(p.UID), ResourceVersion: p.ResourceVersion}
	}
	return o, nil
}

func (c *call) checkPreconditions(o wire.DeleteOptions, cur *doc, rev int64) error {
	p := o.Preconditions
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != cur.metaString("uid") {
		return wire.NewConflict(c.res.gr(), c.name, fmt.Sprintf(
			"Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, cur.metaString("uid")))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != fmt.Sprint(rev) {
		return wire.NewConflict(c.res.gr(), c.name, fmt.Sprintf(
			"Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %d", *p.ResourceVersion, rev))
	}
	return nil
}

// deleteCollection answers DELETE on a collection as kube's
// DeleteCollection (handlers/delete.go, registry/generic/registry/store.go):
// the query's list options, validated as a LIST's, select the objects —
// with a limit, only the first page of them — each listed page is deleted
// object by object with the request's DeleteOptions (a failed
// precondition on one ends the request), and the answer is the list the
// objects were deleted from.
func (c *call) deleteCollection() error {
	lopts, paged, err := deleteCollectionOptions(c.r.URL.Query())
	if err != nil {
		return err
	}
	pred, err := predicate(c.res, lopts.LabelSelector, lopts.FieldSelector)
	if err != nil {
		return err
	}
	opts, err := c.deleteOptions()
	if err != nil {
		return err
	}
	if opts.unsafe {
		return errUnsafeDeleteCollection()
	}
	// kube's store, not its handler, reads the continue token and the
	// resourceVersion: their 400s come after the DeleteOptions' errors.
	spec, err := storage.SpecOf(lopts)
	if err != nil {
		return err
	}
	lo := spec.ListOptions(pred)
	var (
		meta    wire.ListMeta
		listed  []storage.KV
		deleted int
	)
	for first := true; ; first = false {
		page, err := c.readPage(lo)
		if err != nil {
			return err
		}
		// As kube's, which lists (converting each object to the
		// request's version) before it deletes the page's objects.
		served, err := c.res.servedPage(page.Items)
		if err != nil {
			return err
		}
		if first {
			// kube answers with the first page's list metadata, its
			// continue token too, whether or not it went on to the next.
			meta = wire.ListMeta{ResourceVersion: strconv.FormatInt(page.Revision, 10),
				Continue: page.Continue, RemainingItemCount: page.RemainingItemCount}
		}
		listed = append(listed, served...)
		n, err := c.deleteListed(page.Items, opts)
		deleted += n
		if err != nil {
			return err
		}
		if paged || page.Continue == "" {
			break
		}
		// The next page continues the first's snapshot, whatever
		// resourceVersion the request named.
		lo = storage.GetListOptions{Limit: lo.Limit, Continue: page.Continue, Predicate: pred}
	}
	c.tr.Step("Objects deleted from database", slog.Int("count", deleted))
	// Each item is answered as listed, one deleted meanwhile by another
	// request too.
	page := storage.ListPage{Items: listed}
	if out, err := c.output(); err == nil && out.proto && out.form == formJSON {
		return c.protoList(out, meta, page)
	}
	return c.streamObjects(meta, page, "")
}

// deleteListed deletes the listed objects kvs of a collection, counting
// those it deleted; one already gone is skipped. Each goes through the
// generic store's Delete (deleteflow.go), as kube's DeleteCollection calls
// its Store's Delete for each: CRDs too, whose REST.Delete (the cleanup
// finalizer, crdfinalizer.go) it does not call, so a CRD without
// finalizers is deleted at once and its custom resources are left in
// storage, where a CRD created again under its name finds them.
func (c *call) deleteListed(kvs []storage.KV, opts deleteRequest) (int, error) {
	deleted := 0
	dry := len(opts.DryRun) > 0
	for _, kv := range kvs {
		if dry && c.res.plural == "namespaces" {
			continue
		}
		name := strings.TrimPrefix(kv.Key, c.res.prefix(c.ns))
		if c.res.namespaced && c.ns == "" {
			// A collection of an empty namespace, listed across
			// namespaces: kube's Delete of its first object refuses
			// it by key (keyError), so only an empty one is deleted.
			return deleted, c.keyError(name)
		}
		res, err := c.deleteObject(c.r.Context(), name, opts, dry)
		if st := (*wire.Status)(nil); errors.As(err, &st) && st.Code == http.StatusNotFound {
			continue
		}
		if err != nil {
			return deleted, err
		}
		if c.res.isCRDs() && res.deleted && !dry {
			c.s.unserveCRD(name, res.rev)
		}
		deleted++
	}
	return deleted, nil
}
