package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// GroupVersionResource names a resource collection on the server. The core
// group is "" (served under /api/v1).
type GroupVersionResource struct {
	Group, Version, Resource string
}

func (gvr GroupVersionResource) String() string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// PatchType is the Content-Type of a PATCH body.
type PatchType string

const (
	// MergePatch is an RFC 7386 JSON merge patch.
	MergePatch PatchType = "application/merge-patch+json"
	// JSONPatch is an RFC 6902 list of operations.
	JSONPatch PatchType = "application/json-patch+json"
	// StrategicMergePatch is Kubernetes' strategic merge patch; servers
	// accept it only for built-in types.
	StrategicMergePatch PatchType = "application/strategic-merge-patch+json"
	// ApplyPatch is a server-side apply: YAML or JSON of the fields the
	// field manager owns (see Resource.Apply).
	ApplyPatch PatchType = "application/apply-patch+yaml"
)

// Resource is a typed client for one resource, in one namespace or in all
// of them. T is the object type, for example *corev1.Pod or
// *object.Unstructured; responses are decoded into T with encoding/json,
// or with T's protobuf methods when it has them (see protobuf.go).
// A Resource is immutable and safe for concurrent use.
type Resource[T object.Object] struct {
	c         *Client
	gvr       GroupVersionResource
	namespace string
	isSub     bool        // a copy made by Subresource
	sub       string      // the subresource addressed ("status") when isSub
	proto     *protoState // nil: JSON only (see protobuf.go)
}

// NewResource returns the client of gvr across all namespaces (or of a
// cluster-scoped resource).
func NewResource[T object.Object](c *Client, gvr GroupVersionResource) *Resource[T] {
	r := &Resource[T]{c: c, gvr: gvr}
	if !c.noProto {
		r.proto = newProtoState[T](gvr)
	}
	return r
}

// Namespace returns a copy scoped to ns; "" means all namespaces, or a
// cluster-scoped resource.
func (r *Resource[T]) Namespace(ns string) *Resource[T] {
	cp := *r
	cp.namespace = ns
	return &cp
}

// GVR returns the resource r is a client of.
func (r *Resource[T]) GVR() GroupVersionResource { return r.gvr }

// path is the collection path in ns, with name (and r's subresource)
// appended when given. It checks nothing: see objectPath and
// collectionPath.
func (r *Resource[T]) path(ns, name string) string {
	var b strings.Builder
	if r.gvr.Group == "" {
		b.WriteString("/api/" + r.gvr.Version)
	} else {
		b.WriteString("/apis/" + r.gvr.Group + "/" + r.gvr.Version)
	}
	if ns != "" {
		b.WriteString("/namespaces/" + ns)
	}
	b.WriteString("/" + r.gvr.Resource)
	if name != "" {
		b.WriteString("/" + name)
		if r.isSub {
			b.WriteString("/" + r.sub)
		}
	}
	return b.String()
}

// objectNamespace is where obj is written: r's namespace, else obj's own.
func (r *Resource[T]) objectNamespace(obj T) string {
	if r.namespace != "" {
		return r.namespace
	}
	return obj.GetNamespace()
}

// Get reads one object by name: the latest, or, with a ResourceVersion
// option, one no older than that.
func (r *Resource[T]) Get(ctx context.Context, name string, opts ...GetOption) (T, error) {
	path, err := r.objectPath(r.namespace, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return r.doObject(ctx, request{method: http.MethodGet, path: path, query: newGetOptions(opts).query()})
}

// Create writes a new object; the server fills in uid, resourceVersion and,
// for generateName, the name. An existing name fails IsAlreadyExists.
// On a subresource (pods/eviction, pods/binding, serviceaccounts/token) it
// posts obj to the subresource of the object obj names.
func (r *Resource[T]) Create(ctx context.Context, obj T, opts ...WriteOption) (T, error) {
	var zero T
	o, err := newWriteOptions(opts, false)
	if err != nil {
		return zero, err
	}
	var path string
	if !r.isSub {
		path, err = r.collectionPath(r.objectNamespace(obj))
	} else {
		path, err = r.objectPath(r.objectNamespace(obj), obj.GetName())
	}
	if err != nil {
		return zero, err
	}
	return r.write(ctx, request{method: http.MethodPost, path: path, query: o.query()}, obj)
}

// Update replaces an object (or, on a subresource, that part of it, such
// as its status). A resourceVersion in obj makes it conditional: a stale
// one fails IsConflict.
func (r *Resource[T]) Update(ctx context.Context, obj T, opts ...WriteOption) (T, error) {
	var zero T
	o, err := newWriteOptions(opts, false)
	if err != nil {
		return zero, err
	}
	path, err := r.objectPath(r.objectNamespace(obj), obj.GetName())
	if err != nil {
		return zero, err
	}
	return r.write(ctx, request{method: http.MethodPut, path: path, query: o.query()}, obj)
}

// Patch applies data, of type pt, to the named object. A patch of type
// ApplyPatch is an apply (see Apply).
func (r *Resource[T]) Patch(ctx context.Context, name string, pt PatchType, data []byte, opts ...WriteOption) (T, error) {
	var zero T
	o, err := newWriteOptions(opts, pt == ApplyPatch)
	if err != nil {
		return zero, err
	}
	path, err := r.objectPath(r.namespace, name)
	if err != nil {
		return zero, err
	}
	if data == nil {
		data = []byte{}
	}
	return r.doObject(ctx, request{method: http.MethodPatch, path: path, query: o.query(),
		body: data, contentType: string(pt)})
}

// DeleteResult is what the server answered a successful delete with. It
// sends one of two things, depending on the resource and on whether the
// object is gone yet:
//
//   - the object (Object set, Status nil): namespaces and CRDs always;
//     pods, services and the other built-ins whose kube store returns
//     the deleted object; any object that still exists because finalizers
//     or a grace period hold it, with metadata.deletionTimestamp set (Code
//     202 when the server says so);
//   - a Status of status "Success" naming the object in its details
//     (Status set, Object the zero T): custom resources and most other
//     built-in resources once the object is gone.
type DeleteResult[T object.Object] struct {
	Object T
	Status *wire.Status
	// Code is the HTTP status: 200, or 202 Accepted when deletion is
	// under way but not finished. An object that still exists (finalizers,
	// a grace period) carries metadata.deletionTimestamp.
	Code int
}

// HasObject reports whether the server sent the object back.
func (d DeleteResult[T]) HasObject() bool { return d.Status == nil && !isZero(d.Object) }

// Delete removes the named object and returns what the server sent back
// (see DeleteResult). opts carries preconditions (a stale one fails
// IsConflict), grace period and propagation policy. Errors are
// *wire.Status values, as for every call.
func (r *Resource[T]) Delete(ctx context.Context, name string, opts wire.DeleteOptions) (DeleteResult[T], error) {
	if err := r.noSubresource("delete"); err != nil {
		return DeleteResult[T]{}, err
	}
	path, err := r.objectPath(r.namespace, name)
	if err != nil {
		return DeleteResult[T]{}, err
	}
	resp, err := r.deleteAt(ctx, path, nil, opts)
	if err != nil {
		return DeleteResult[T]{}, err
	}
	defer resp.Body.Close()
	return decodeDeleteResult[T](resp)
}

// decodeDeleteResult reads a delete's answer, which is either a Status or
// the object; the kind field tells them apart.
func decodeDeleteResult[T object.Object](resp *http.Response) (DeleteResult[T], error) {
	res := DeleteResult[T]{Code: resp.StatusCode}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDeleteBody+1))
	if err != nil {
		return res, fmt.Errorf("client: reading delete response: %w", err)
	}
	if len(body) > maxDeleteBody {
		return res, fmt.Errorf("client: delete response larger than %d bytes", maxDeleteBody)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return res, nil // nothing sent back; the delete still succeeded
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(body, &kind); err != nil {
		return res, fmt.Errorf("client: decoding delete response: %w", err)
	}
	if kind.Kind == "Status" {
		st := new(wire.Status)
		if err := json.Unmarshal(body, st); err != nil {
			return res, fmt.Errorf("client: decoding delete response: %w", err)
		}
		res.Status = st
		return res, nil
	}
	if err := json.Unmarshal(body, &res.Object); err != nil {
		return res, fmt.Errorf("client: decoding delete response: %w", err)
	}
	return res, nil
}

// maxDeleteBody caps a delete's answer: one object, which etcd limits to
// 1.5 MiB, with room for encoding.
const maxDeleteBody = 16 << 20

// isZero reports whether v is T's zero value (a nil pointer for the usual
// pointer types).
func isZero[T any](v T) bool {
	rv := reflect.ValueOf(any(v))
	return !rv.IsValid() || rv.IsZero()
}

// DeleteCollection removes every object that list's selectors match in
// r's namespace, each as Delete would with del (grace period, propagation
// policy, preconditions, dryRun), in client-go's argument order. The
// server lists them with list as a LIST would: with a Limit it deletes
// only the first page, and a ResourceVersion is also each object's delete
// precondition.
func (r *Resource[T]) DeleteCollection(ctx context.Context, del wire.DeleteOptions, list wire.ListOptions) error {
	path, err := r.collectionPath(r.namespace)
	if err != nil {
		return err
	}
	list.Watch = false
	resp, err := r.deleteAt(ctx, path, list.Query(), del)
	if err != nil {
		return err
	}
	return drainClose(resp.Body)
}

func (r *Resource[T]) deleteAt(ctx context.Context, path string, q url.Values, opts wire.DeleteOptions) (*http.Response, error) {
	if opts.Kind == "" {
		opts.TypeMeta = wire.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}
	}
	body, err := json.Marshal(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding delete options: %w", ErrRequest, err)
	}
	return r.c.send(ctx, request{method: http.MethodDelete, path: path, query: q, body: body})
}

func (r *Resource[T]) doObject(ctx context.Context, req request) (T, error) {
	var out T
	req.accept = r.accept()
	resp, err := r.c.send(ctx, req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if r.proto != nil && isProtobufResponse(resp.Header) {
		return r.decodeProtobufObject(resp.Body, req)
	}
	raw, err := readValue(resp.Body)
	if err == nil && r.isSub && isStatusJSON(raw) {
		return out, nil
	}
	if err == nil {
		err = decodeObject(raw, &out)
	}
	if err != nil {
		return out, fmt.Errorf("client: decoding %s %s: %w", req.method, req.path, err)
	}
	return out, nil
}

// isStatusJSON says whether raw is a meta/v1 Status: what pods' eviction
// and binding subresources answer a successful create with, rather than
// an object. Objects of other kinds are not checked, so as not to parse
// them twice.
func isStatusJSON(raw []byte) bool {
	var tm wire.TypeMeta
	return json.Unmarshal(raw, &tm) == nil && isStatusKind(tm)
}
