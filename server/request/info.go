// Package request describes what an API request asks for, in the terms
// authorization and routing use: verb, API group, resource, namespace,
// name. The server parses it once from the URL and method, and puts it in
// the request context for every filter after (WithRequestInfo). Parsing
// knows no resource's scope, so WithScope, before authorization, refuses
// with 404 a cluster-scoped resource put under a namespace
// (/api/v1/namespaces/a/namespaces/b), which an authorizer would otherwise
// judge in namespace a.
package request

import "context"

// Info is what a request asks for. For non-resource requests (/healthz,
// /version, discovery) IsResourceRequest is false and Path is set.
type Info struct {
	IsResourceRequest bool
	Path              string
	// Verb is one of get, list, watch, create, update, patch, delete,
	// deletecollection for resource requests; the lower-case HTTP method
	// for the others.
	Verb       string
	APIPrefix  string // "api" or "apis"
	APIGroup   string // "" for the core group
	APIVersion string
	Namespace  string
	// UnderNamespace: the path addresses Resource inside a namespace,
	// …/namespaces/{Namespace}/{Resource}…. It is false for a namespace
	// itself (/api/v1/namespaces/{Name}, whose Namespace is its own name,
	// as kube's RequestInfo has it) and for requests across namespaces.
	UnderNamespace bool
	Resource       string
	Subresource    string
	Name           string
	// WatchPath: the path has the /watch/ prefix after the version, so
	// Verb is watch whatever the method, as kube's RequestInfo has it
	// (its router serves such a path for GET only).
	WatchPath bool
	// EmptySegment: the path has an empty segment other than an empty
	// namespace before a resource (/api//v1/namespaces,
	// /api/v1/namespaces///configmaps). Its other fields are what kube's
	// RequestInfo reads, the parts after it shifted, for authorization;
	// no route serves it.
	EmptySegment bool
}

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra is what kube's user.Info carries besides (a service-account
	// token's pod name and uid, node, credential id).
	Extra map[string][]string
}

type infoKey struct{}
type userKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoFrom returns the request info in ctx, if any.
func InfoFrom(ctx context.Context) (*Info, bool) {
	i, ok := ctx.Value(infoKey{}).(*Info)
	return i, ok
}

// WithUser returns ctx carrying the authenticated user.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user in ctx, if any.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok
}
