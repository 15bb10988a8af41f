package client

import (
	"fmt"
	"strings"
)

// Subresource returns a copy of r that addresses the subresource name of
// the objects it names: Get, Update, Patch and Apply address
// .../{name}/{subresource}, and Create posts to
// .../{obj.GetName()}/{subresource}. T is the subresource's type, which
// need not be the object's:
//
//	pods.Subresource("status").Update(ctx, pod)    // *corev1.Pod
//	client.NewResource[*autoscalingv1.Scale](c, deployments).Namespace(ns).Subresource("scale").Get(ctx, "web")
//	client.NewResource[*policyv1.Eviction](c, podsGVR).Namespace(ns).Subresource("eviction").Create(ctx, eviction)
//
// A subresource has no collection: List, ListAll, ListEach, ListChunks,
// Watch, Delete and DeleteCollection fail with ErrRequest, unsent, as
// does every call when name is not a valid path segment or r is a
// subresource already.
//
// The copy negotiates protobuf on its own (see protobuf.go): its writes
// are JSON until the server has answered it in protobuf, which also tells
// the subresource's kind, so keep the copy rather than making one per
// call.
func (r *Resource[T]) Subresource(name string) *Resource[T] {
	cp := *r
	cp.isSub, cp.sub = true, name
	if r.isSub {
		// Not a path segment, so every call fails (client-go: "subresource
		// already set").
		cp.sub = r.sub + "/" + name
	}
	if r.proto != nil {
		cp.proto = &protoState{}
	}
	return &cp
}

// objectPath is the path of the named object (and of r's subresource) in
// ns, after checking that each part is one path segment.
func (r *Resource[T]) objectPath(ns, name string) (string, error) {
	if err := checkSegment("name", name); err != nil {
		return "", err
	}
	if err := r.checkScope(ns); err != nil {
		return "", err
	}
	return r.path(ns, name), nil
}

// collectionPath is the path of r's collection in ns. A subresource has
// none.
func (r *Resource[T]) collectionPath(ns string) (string, error) {
	if err := r.noSubresource("list, watch or delete a collection of"); err != nil {
		return "", err
	}
	if err := r.checkScope(ns); err != nil {
		return "", err
	}
	return r.path(ns, ""), nil
}

// checkScope checks the namespace and subresource a path is built of.
func (r *Resource[T]) checkScope(ns string) error {
	if ns != "" {
		if err := checkSegment("namespace", ns); err != nil {
			return err
		}
	}
	if r.isSub {
		return checkSegment("subresource", r.sub)
	}
	return nil
}

// noSubresource refuses what a subresource cannot do.
func (r *Resource[T]) noSubresource(verb string) error {
	if !r.isSub {
		return nil
	}
	return fmt.Errorf("%w: cannot %s subresource %s/%s", ErrRequest, verb, r.gvr.Resource, r.sub)
}

// checkSegment refuses a name, namespace or subresource that is not one
// path segment, by kube's rule (apimachinery's IsValidPathSegmentName,
// which client-go applies too): not "." or "..", no "/" or "%". Such a
// name would address another path ("p/status" the status of p) rather
// than be refused by the server.
func checkSegment(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", ErrRequest, what)
	case s == "." || s == "..":
		return fmt.Errorf("%w: invalid %s %q: may not be '%s'", ErrRequest, what, s, s)
	case strings.ContainsAny(s, "/%"):
		return fmt.Errorf("%w: invalid %s %q: may not contain '/' or '%%'", ErrRequest, what, s)
	}
	return nil
}
