package request

import (
	"net/http"

	"github.com/listwatch/listwatch/wire"
)

// Scope is where the objects of a served resource live.
type Scope uint8

const (
	// ScopeUnknown: the resource is not served (now); the router answers
	// 404 after authorization, as kube-apiserver does.
	ScopeUnknown Scope = iota
	// ScopeNamespaced: objects live in a namespace.
	ScopeNamespaced
	// ScopeCluster: objects live outside namespaces (namespaces, CRDs,
	// custom resources of a Cluster-scoped CRD).
	ScopeCluster
)

// Scoper tells the scope of a resource at request time. The server's
// registry is one: its answer changes as CRDs are created and deleted.
type Scoper interface {
	Scope(group, version, resource string) Scope
}

// NoRouteWriter is a Scoper that answers a path no route serves itself
// (as the server does, as kube-apiserver: not always with a Status).
type NoRouteWriter interface {
	WriteNoRoute(w http.ResponseWriter, r *http.Request)
}

// Routable reports whether a route exists for info's path when its
// resource has scope s. No route puts a cluster-scoped resource inside a
// namespace: /api/v1/namespaces/a/namespaces/b and
// /apis/g/v/namespaces/a/{cluster-plural}/x name nothing, though Parse
// gives them Namespace a (as kube's RequestInfo does) and an authorizer
// would judge them in namespace a. The namespace object itself,
// /api/v1/namespaces/{name}[/status|/finalize], is the one cluster-scoped
// path whose Namespace is set (to the name). As kube's CRD handler, any
// other cluster-scoped resource is routable only when Namespace is empty.
// An empty namespace (/api/v1/namespaces//nodes) is judged cluster-wide,
// so it is left to the authorizer and then the router, which serves
// there a cluster-scoped custom resource only, as kube's.
func (i *Info) Routable(s Scope) bool {
	if !i.IsResourceRequest || s != ScopeCluster {
		return true
	}
	if i.APIGroup == "" && i.Resource == "namespaces" {
		return !i.UnderNamespace || i.Namespace == ""
	}
	return i.Namespace == ""
}

// WithScope answers 404 (kube's Status for a path no route serves) for a
// request Routable refuses, looking the scope up in scopes at request
// time. It must run after WithRequestInfo and before authorization, so that
// an authorizer never allows, in the namespace of the path, a request
// that would act on a cluster-scoped object; and after authentication, so
// that anonymous clients cannot probe which resources are cluster-scoped.
// The router makes the same check again (the scope can change between the
// two), so a chain without this filter serves nothing more; it only
// authorizes such requests before refusing them.
func WithScope(scopes Scoper) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info, ok := InfoFrom(r.Context())
			if ok && info.IsResourceRequest && !info.Routable(scopes.Scope(info.APIGroup, info.APIVersion, info.Resource)) {
				if nr, ok := scopes.(NoRouteWriter); ok {
					nr.WriteNoRoute(w, r)
					return
				}
				WriteStatus(w, r, NotFoundPath())
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// NotFoundPath is kube-apiserver's 404 for a path that names no served
// resource.
func NotFoundPath() *wire.Status {
	st := wire.NewNotFound(wire.GroupResource{}, "")
	st.Message = "the server could not find the requested resource"
	st.Details = &wire.StatusDetails{}
	return st
}
