package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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

// path is the collection path in ns, with name appended when given.
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

// Get reads one object by name.
func (r *Resource[T]) Get(ctx context.Context, name string) (T, error) {
	if name == "" {
		var zero T
		return zero, fmt.Errorf("%w: name is empty", ErrRequest)
	}
	return r.doObject(ctx, request{method: http.MethodGet, path: r.path(r.namespace, name)})
}

// Create writes a new object; the server fills in uid, resourceVersion and,
// for generateName, the name. An existing name fails IsAlreadyExists.
func (r *Resource[T]) Create(ctx context.Context, obj T) (T, error) {
	return r.write(ctx, request{method: http.MethodPost, path: r.path(r.objectNamespace(obj), "")}, obj)
}

// Update replaces an object. A resourceVersion in obj makes it conditional:
// a stale one fails IsConflict.
func (r *Resource[T]) Update(ctx context.Context, obj T) (T, error) {
	if obj.GetName() == "" {
		var zero T
		return zero, fmt.Errorf("%w: name is empty", ErrRequest)
	}
	return r.write(ctx, request{method: http.MethodPut, path: r.path(r.objectNamespace(obj), obj.GetName())}, obj)
}

// Patch applies data, of type pt, to the named object.
func (r *Resource[T]) Patch(ctx context.Context, name string, pt PatchType, data []byte) (T, error) {
	if name == "" {
		var zero T
		return zero, fmt.Errorf("%w: name is empty", ErrRequest)
	}
	if data == nil {
		data = []byte{}
	}
	return r.doObject(ctx, request{method: http.MethodPatch, path: r.path(r.namespace, name),
		body: data, contentType: string(pt)})
}

// Delete removes the named object. opts carries preconditions (a stale
// one fails IsConflict), grace period and propagation policy.
func (r *Resource[T]) Delete(ctx context.Context, name string, opts wire.DeleteOptions) error {
	if name == "" {
		return fmt.Errorf("%w: name is empty", ErrRequest)
	}
	return r.deleteAt(ctx, r.path(r.namespace, name), nil, opts)
}

// DeleteCollection removes every object that opts' selectors match in r's
// namespace.
func (r *Resource[T]) DeleteCollection(ctx context.Context, opts wire.ListOptions) error {
	opts.Watch = false
	return r.deleteAt(ctx, r.path(r.namespace, ""), opts.Query(), wire.DeleteOptions{})
}

func (r *Resource[T]) deleteAt(ctx context.Context, path string, q url.Values, opts wire.DeleteOptions) error {
	if opts.Kind == "" {
		opts.TypeMeta = wire.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}
	}
	body, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("%w: encoding delete options: %w", ErrRequest, err)
	}
	resp, err := r.c.send(ctx, request{method: http.MethodDelete, path: path, query: q, body: body})
	if err != nil {
		return err
	}
	return drainClose(resp.Body)
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
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("client: decoding %s %s: %w", req.method, req.path, err)
	}
	return out, nil
}
