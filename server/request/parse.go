package request

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/listwatch/listwatch/object"
)

// ErrUnknownKind: a /watch/ (or other special-verb) path names nothing after
// the verb, so neither resource nor namespace can be told.
var ErrUnknownKind = errors.New("unable to determine kind and namespace from url")

// namespaceSubresources are the subresources of a namespace itself, so
// /api/v1/namespaces/x/status is the namespace x's status, not a resource
// called "status" inside x.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// Parse tells what r asks for, the way kube-apiserver's RequestInfoFactory
// does:
//
//	/api/v1/[watch/][namespaces/{ns}/]{resource}[/{name}[/{subresource}]]
//	/apis/{group}/{version}/… likewise
//
// GET on a collection is list, or watch with watch=true (or a /watch/
// path); GET on a name is get; POST create; PUT update; PATCH patch;
// DELETE delete on a name, deletecollection on a collection. Everything
// else (discovery, /version, /healthz) is a non-resource request whose
// verb is the lower-case method.
func Parse(r *http.Request) (*Info, error) {
	info := &Info{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return info, nil
	}
	// An empty segment ("/api//v1") shifts every part after it, as in
	// kube's RequestInfo, which authorization judges; no route serves
	// such a path (EmptySegment). The one exception is an empty namespace
	// before a resource (/api/v1/namespaces//configmaps), which kube's
	// router takes as namespace "": a list across namespaces, authorized
	// cluster-wide.
	emptyNS := emptyNamespaceIndex(parts)
	for i, p := range parts {
		if p == "" && i != emptyNS {
			info.EmptySegment = true
		}
	}
	prefix := parts[0]
	parts = parts[1:]
	if prefix == "apis" {
		if len(parts) < 3 {
			return info, nil
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.APIPrefix = prefix
	info.IsResourceRequest = true
	info.APIVersion = parts[0]
	parts = parts[1:]

	byMethod := true
	if parts[0] == "watch" {
		if len(parts) < 2 {
			return nil, fmt.Errorf("%w, %v", ErrUnknownKind, r.URL) // kube's message
		}
		info.Verb = "watch"
		info.WatchPath = true
		byMethod = false
		parts = parts[1:]
	} else {
		info.Verb = methodVerb(r.Method)
	}

	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
			info.UnderNamespace = true
		}
	}
	if len(parts) >= 3 {
		info.Subresource = parts[2]
	}
	if len(parts) >= 2 {
		info.Name = parts[1]
	}
	info.Resource = parts[0]

	if byMethod && info.Name == "" && info.Verb == "get" {
		info.Verb = "list"
		q := r.URL.Query()
		if IsWatch(q) {
			info.Verb = "watch"
		}
		// A list or watch pinned to one name by field selector is
		// authorized as that name, as kube does.
		if fs, err := object.ParseFieldSelector(q.Get("fieldSelector")); err == nil {
			if name, ok := fs.RequiresExactMatch("metadata.name"); ok && validPathSegment(name) {
				info.Name = name
			}
		}
	}
	if byMethod && info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}
	return info, nil
}

// emptyNamespaceIndex is the index in parts of a namespace segment that
// is empty and followed by a resource (not a namespace's status or
// finalize), or -1.
func emptyNamespaceIndex(parts []string) int {
	i := 2 // api/{version}/
	if parts[0] == "apis" {
		i = 3 // apis/{group}/{version}/
	}
	if i < len(parts) && parts[i] == "watch" {
		i++
	}
	if i+2 < len(parts) && parts[i] == "namespaces" && parts[i+1] == "" && !namespaceSubresources[parts[i+2]] {
		return i + 1
	}
	return -1
}

func methodVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// IsWatch reads the watch parameter as kube's parameter codec does: any
// value but "false" (in any case) and "0" is a watch, the empty one too.
func IsWatch(q url.Values) bool {
	v, ok := q["watch"]
	if !ok || len(v) == 0 {
		return false
	}
	switch strings.ToLower(v[0]) {
	case "false", "0":
		return false
	}
	return true
}

func validPathSegment(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/%")
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
