package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// create answers POST on a collection: 201 with the stored object, 409
// AlreadyExists, 404 if the namespace is missing, 403 if it is
// terminating, 422 for invalid metadata.
func (c *call) create() error {
	if err := c.checkWriteOptions("CreateOptions"); err != nil {
		return err
	}
	d, err := c.decodeBody()
	if err != nil {
		return err
	}
	// As kube's store, a create whose name is generated from
	// generateName is tried again with a new name while the name it
	// drew exists, up to maxNameGenerationAttempts times in all.
	attempts := 1
	if d.metaString("name") == "" && d.metaString("generateName") != "" {
		attempts = maxNameGenerationAttempts
	}
	var value []byte
	name := c.name
	for i := range attempts {
		try := d
		if i < attempts-1 {
			try = d.clone()
		}
		c.name = name // createDoc names the call after the object
		value, err = c.createDoc(try)
		// Tried again only when the name was generated: mutating
		// admission may have named the object (c.mutated is set only
		// for a name left to generate), and kube's store decides after it.
		if wire.ReasonOf(err) != wire.ReasonAlreadyExists || c.mutated == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	return c.writeObject(http.StatusCreated, value)
}

// maxNameGenerationAttempts is how many names kube's store draws for a
// create from generateName before it gives up.
const maxNameGenerationAttempts = 8

// errRVSetOnCreate is kube's storage's refusal of a create that names a
// resourceVersion.
var errRVSetOnCreate = errors.New("resourceVersion should not be set on objects to be created")

// createDoc admits and stores a new object d (a create's body, or the
// result of an apply or an update to an object that does not exist),
// returning the stored value.
func (c *call) createDoc(d *doc) (_ []byte, err error) {
	defer func() { c.finishAllocation(err == nil) }()
	if c.res.terminating {
		// kube's crdHandler wraps the admission of a create of a custom
		// resource whose CRD is being deleted in forbidCreateAdmission,
		// which refuses it before any plugin runs.
		name := c.name
		if name == "" {
			name = d.metaString("name")
		}
		return nil, kubeStatus(apierrors.NewForbidden(schema.GroupResource{Group: c.res.group, Resource: c.res.plural}, name,
			errors.New("create not allowed while custom resource definition is terminating")))
	}
	// kube's NamespaceLifecycle, the first of its mutating admission
	// plugins, refuses a create in a namespace that is missing or being
	// deleted, before validation and webhooks (namespaceLifecycle, called
	// by admit), naming the object as admission sees it, before the store
	// draws a name from generateName.
	if c.res.namespaced {
		c.lifecycleName = c.name // the path's name, as kube's handler names the attributes
		if c.lifecycleName == "" {
			c.lifecycleName = admissionName(d)
		}
	}
	if err := c.admit(d, nil, nil); err != nil {
		return nil, err
	}
	if err := c.namespaceLifecycle(); err != nil { // a path that did not check
		return nil, err
	}
	// kube's storage refuses a POST of an object that names a
	// resourceVersion (one its versioner parses, but "0") once mutating
	// admission has run (c.createRV), with a plain 500; a dry run never
	// reaches that check, and an apply or update that creates goes
	// through kube's GuaranteedUpdate, which ignores it.
	rvSet := false
	sentRV := c.createRV
	var rv string
	if json.Unmarshal(sentRV, &rv) == nil {
		if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n != 0 {
			rvSet = c.r.Method == http.MethodPost
		}
	}
	if err := c.admitCustom(d, nil); err != nil {
		return nil, err
	}
	if err := c.webhookValidateCustom(d, nil); err != nil {
		return nil, err
	}
	name := d.metaString("name")
	c.name = name
	value := d.encode()
	obj := d.takeView() // the typed object value encodes, if any
	c.tr.Step("About to store object in database")
	if c.res.namespaced && c.ns == "" {
		// kube's key function, should validation have let an object
		// without a namespace through (keyError): never a key outside
		// every namespace.
		return nil, c.keyError(name)
	}
	if isDryRun(c.r) {
		// kube's dry-run storage refuses a name that exists, as a real
		// create would.
		if err := c.alreadyExists(d); err != nil {
			return nil, err
		}
		// It then encodes the object as it would store it and answers
		// it decoded from there (kube's dry-run copyInto): a custom
		// resource in another version than the request's is answered
		// as read back from the storage version (servedAnswer).
		sv, err := c.res.toStorage(value)
		if err != nil {
			return nil, err
		}
		if c.res.crd != "" {
			value = sv
		}
		if c.r.Method == http.MethodPost && sentRV != nil {
			// The admitted object as it would have stored it, with the
			// resourceVersion the client sent, as sent.
			if c.res.crd != "" && valueAPIVersion(sv) != d.apiVersion {
				if d, err = decodeDoc(sv); err != nil {
					return nil, wire.NewInternalError(err)
				}
			}
			d.meta["resourceVersion"] = sentRV
			return d.encodeFields(), nil
		}
		return value, nil
	}
	if rvSet {
		return nil, plainError(errRVSetOnCreate)
	}
	if value, err = c.res.toStorage(value); err != nil {
		return nil, err
	}
	rev, err := c.s.store.Create(c.r.Context(), c.res.key(c.ns, name), value)
	c.tr.Step("Object stored in database")
	if errors.Is(err, storage.ErrExists) {
		if err := c.alreadyExists(d); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, storageError(err, c.res, name)
	}
	stored, err := storage.WithResourceVersion(value, rev)
	if err != nil {
		return nil, err
	}
	c.respondWith(obj, rev, stored)
	c.s.afterWrite(c.res, stored)
	c.awaitWrite(rev, false)
	return stored, nil
}

// alreadyExists is kube's 409 for a create of d when an object of its
// name is stored, nil when there is none: AlreadyExists, which says that
// the server could not generate a unique name when d has a generateName
// (even beside a name of its own, as kube's CheckGeneratedNameError), with
// "object is being deleted: " first when the stored one is being deleted.
func (c *call) alreadyExists(d *doc) error {
	name := d.metaString("name")
	kv, err := c.s.store.Get(c.r.Context(), c.res.key(c.ns, name))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case err != nil:
		return storageError(err, c.res, name)
	}
	st := wire.NewAlreadyExists(c.res.gr(), name)
	if d.metaString("generateName") != "" {
		st.Message += ", the server was not able to generate a unique name for the object"
		st.Details.RetryAfterSeconds = 1
	}
	if cur, err := decodeDoc(kv.Value); err == nil && cur.metaString("deletionTimestamp") != "" {
		st.Message = "object is being deleted: " + st.Message
	}
	return st
}

// namespaceLifecycle runs the pending check of a create's namespace
// (lifecycleName), once.
func (c *call) namespaceLifecycle() error {
	if c.lifecycleName == "" {
		return nil
	}
	name := c.lifecycleName
	c.lifecycleName = ""
	if c.ns == "" {
		// kube's NamespaceLifecycle admits a request without a namespace
		// (a create on a path with an empty namespace segment, which
		// validation then refuses).
		return nil
	}
	return c.s.checkNamespaceOpen(c.r.Context(), c.res, c.ns, name)
}

// checkNamespaceOpen: ns exists and is not being deleted.
func (s *Server) checkNamespaceOpen(ctx context.Context, r *resource, ns, name string) error {
	nsRes, _ := s.reg.lookup("", "v1", "namespaces")
	key := nsRes.key("", ns)
	// As kube's NamespaceLifecycle admission: the namespace as the watch
	// cache holds it decides (it may lag a write by a moment, as kube's
	// informer does); one the cache does not hold yet is read from
	// storage, so a namespace just created is never refused.
	// A namespace this server was asked to delete lately is always read
	// from storage (kube's forceLiveLookup), so that content created
	// right after a delete is refused even while the cache lags.
	var (
		kv storage.KV
		ok bool
	)
	if p, isPeeker := nsRes.reader.(storage.Peeker); isPeeker && !s.nsDeleted.has(ns) {
		kv, ok = p.Peek(key)
	}
	if !ok {
		var err error
		kv, err = s.store.Get(ctx, key)
		if errors.Is(err, storage.ErrNotFound) {
			return wire.NewNotFound(nsRes.gr(), ns)
		}
		if err != nil {
			return storageError(err, nsRes, ns)
		}
	}
	value := kv.Value
	var meta struct {
		Metadata struct {
			DeletionTimestamp string `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	// Only a namespace whose JSON names deletionTimestamp somewhere can
	// have one set: the others need no decode.
	if bytes.Contains(value, []byte(`"deletionTimestamp"`)) &&
		json.Unmarshal(value, &meta) == nil && meta.Metadata.DeletionTimestamp != "" {
		return namespaceTerminating(r, ns, name)
	}
	return nil
}

// namespaceTerminating is kube's NamespaceLifecycle refusal of content
// created in namespace ns while it is being deleted, name being
// admissionName's. Its NamespaceTerminating cause is what controllers
// check (apierrors.HasStatusCause) to tell it from other 403s.
func namespaceTerminating(r *resource, ns, name string) error {
	err := apierrors.NewForbidden(schema.GroupResource{Group: r.group, Resource: r.plural}, name,
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", ns),
		Field:   "metadata.namespace",
	})
	return kubeStatus(err)
}

// admissionName is the name kube's admission.NewForbidden gives a new
// object d: its name, else its generateName (no name is generated before
// admission), else "Unknown".
func admissionName(d *doc) string {
	for _, k := range []string{"name", "generateName"} {
		if n := d.metaString(k); n != "" {
			return n
		}
	}
	return "Unknown"
}

// liveLookups remembers, for forceLiveLookupTTL, the namespaces whose
// deletion this server began.
type liveLookups struct {
	mu sync.Mutex
	at map[string]time.Time
}

// forceLiveLookupTTL is how long kube's NamespaceLifecycle reads a
// namespace it saw deleted from storage rather than from its cache.
const forceLiveLookupTTL = 30 * time.Second

func (l *liveLookups) add(ns string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.at == nil {
		l.at = map[string]time.Time{}
	}
	for n, t := range l.at {
		if now.Sub(t) > forceLiveLookupTTL {
			delete(l.at, n)
		}
	}
	l.at[ns] = now
}

func (l *liveLookups) has(ns string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.at[ns]
	return ok && time.Since(t) <= forceLiveLookupTTL
}

// afterWrite lets the server react to its own writes at once (a new CRD is
// named, established and served before the create returns) instead of
// waiting for Run's watch.
func (s *Server) afterWrite(r *resource, stored []byte) {
	if r.isCRDs() {
		// kube's naming and establishing controllers' status writes.
		s.settleCRD(stored)
	}
}

func isDryRun(r *http.Request) bool {
	return len(r.URL.Query()["dryRun"]) > 0
}
