package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
)

// OpenAPI: listwatch stores objects schemaless, so it publishes no
// schemas. What it does publish is the /openapi/v3 index and, per
// group-version, a document whose PATCH operations carry the
// x-kubernetes-group-version-kind extension and the fieldValidation query
// parameter. kubectl reads exactly that to decide that the server
// validates fields itself, and then skips client-side validation, which
// would otherwise need the protobuf /openapi/v2 schema and fail without
// --validate=false. /openapi/v2 is 404, as on a server that has disabled
// it.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	p := strings.Trim(r.URL.Path, "/")
	if p == "openapi/v3" {
		writeJSON(w, http.StatusOK, s.openAPIRoot())
		return
	}
	gvPath, ok := strings.CutPrefix(p, "openapi/v3/")
	if !ok {
		writeError(w, notFoundPath())
		return
	}
	doc, ok := s.openAPIGroupVersion(gvPath)
	if !ok {
		writeError(w, notFoundPath())
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

type openAPIPathRef struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

func (s *Server) openAPIRoot() map[string]map[string]openAPIPathRef {
	paths := map[string]openAPIPathRef{}
	seen := map[string]bool{}
	for _, r := range s.reg.all() {
		gvPath := "api/" + r.version
		if r.group != "" {
			gvPath = "apis/" + r.group + "/" + r.version
		}
		if seen[gvPath] {
			continue
		}
		seen[gvPath] = true
		doc, _ := s.openAPIGroupVersion(gvPath)
		b, _ := json.Marshal(doc)
		sum := sha256.Sum256(b)
		paths[gvPath] = openAPIPathRef{ServerRelativeURL: "/openapi/v3/" + gvPath + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:16]))}
	}
	return map[string]map[string]openAPIPathRef{"paths": paths}
}

// openAPIGroupVersion is the minimal OpenAPI v3 document of one
// group-version ("api/v1", "apis/g/v").
func (s *Server) openAPIGroupVersion(gvPath string) (map[string]any, bool) {
	parts := strings.Split(gvPath, "/")
	var group, version string
	switch {
	case len(parts) == 2 && parts[0] == "api":
		version = parts[1]
	case len(parts) == 3 && parts[0] == "apis":
		group, version = parts[1], parts[2]
	default:
		return nil, false
	}
	paths := map[string]any{}
	for _, r := range s.reg.all() {
		if r.group != group || r.version != version {
			continue
		}
		gvk := map[string]string{"group": r.group, "version": r.version, "kind": r.kind}
		params := []map[string]any{
			{"name": "fieldValidation", "in": "query", "schema": map[string]string{"type": "string"}, "description": "accepted; objects are stored schemaless"},
			{"name": "dryRun", "in": "query", "schema": map[string]string{"type": "string"}},
			{"name": "fieldManager", "in": "query", "schema": map[string]string{"type": "string"}},
		}
		op := func(action string) map[string]any {
			return map[string]any{
				"operationId":                     action + r.kind,
				"parameters":                      params,
				"x-kubernetes-action":             action,
				"x-kubernetes-group-version-kind": gvk,
				"responses":                       map[string]any{"200": map[string]string{"description": "OK"}},
			}
		}
		base := "/" + gvPath + "/"
		if r.namespaced {
			base += "namespaces/{namespace}/"
		}
		if !r.virtual { // create-only: no item paths
			paths[base+r.plural+"/{name}"] = map[string]any{"patch": op("patch"), "put": op("put")}
		}
		paths[base+r.plural] = map[string]any{"post": op("post")}
	}
	if len(paths) == 0 {
		return nil, false
	}
	return map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]string{"title": "Kubernetes", "version": GitVersion},
		"paths":   paths,
	}, true
}
