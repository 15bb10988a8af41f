package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/wire"
)

// discovery serves the legacy discovery documents. A client asking for
// aggregated discovery (apidiscovery.k8s.io/v2) first and plain JSON after
// gets these with Content-Type application/json, which client-go and
// kubectl read as "aggregated discovery unsupported" and fall back to the
// per-group documents.
func (s *Server) discovery(w http.ResponseWriter, r *http.Request, p string) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case p == "/api":
		writeDiscovery(w, r, "APIVersions", &metav1.APIVersions{}, wire.APIVersions{
			TypeMeta: wire.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []wire.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
			},
		})
	case p == "/apis":
		groups, versions := s.reg.groupVersions()
		list := wire.APIGroupList{TypeMeta: wire.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []wire.APIGroup{}}
		for _, g := range groups {
			list.Groups = append(list.Groups, apiGroup(g, versions[g], false))
		}
		writeDiscovery(w, r, "APIGroupList", &metav1.APIGroupList{}, list)
	case parts[0] == "apis" && len(parts) == 2:
		_, versions := s.reg.groupVersions()
		vs, ok := versions[parts[1]]
		if !ok {
			writeNoRoute(w, r)
			return
		}
		writeDiscovery(w, r, "APIGroup", &metav1.APIGroup{}, apiGroup(parts[1], vs, true))
	default:
		group, version := "", parts[1]
		if parts[0] == "apis" {
			group, version = parts[1], parts[2]
		}
		list, ok := s.resourceList(group, version)
		switch {
		case !ok:
			writeNoRoute(w, r)
		case r.Method != http.MethodGet:
			writeResourceError(w, r, methodNotAllowed()) // getOnly
		default:
			writeDiscovery(w, r, "APIResourceList", &metav1.APIResourceList{}, list)
		}
	}
}

// writeDiscovery writes a discovery document, v, in the media type the
// client asks for, as kube-apiserver's discovery handlers negotiate it:
// protobuf (as pb, its k8s.io/apimachinery type, in the envelope of kind
// kind), YAML, or JSON.
func writeDiscovery(w http.ResponseWriter, r *http.Request, kind string, pb any, v any) {
	accept := r.Header.Get("Accept")
	if getOnlyPath(strings.TrimSuffix(r.URL.Path, "/")) {
		// Behind kube's router, which checks Accept first (routeAccepts).
		if err := routeAccepts(accept, false); err != nil {
			writeError(w, err)
			return
		}
	}
	mt, ok := offeredMedia(accept)
	if !ok {
		writeError(w, notAcceptable())
		return
	}
	if mt == mediaJSON {
		writeJSON(w, http.StatusOK, v)
		return
	}
	j, err := json.Marshal(v)
	var body []byte
	if err == nil && mt == mediaProto {
		body, err = jsonToProto(j, pb)
		body = envelope("v1", kind, body)
	} else if err == nil {
		body, err = sigsyaml.JSONToYAML(j)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeBody(w, http.StatusOK, mt, body)
}

func apiGroup(name string, versions []string, typed bool) wire.APIGroup {
	g := wire.APIGroup{Name: name}
	if typed {
		g.TypeMeta = wire.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
	}
	for _, v := range versions {
		g.Versions = append(g.Versions, wire.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

func (s *Server) resourceList(group, version string) (wire.APIResourceList, bool) {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	list := wire.APIResourceList{TypeMeta: wire.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	for _, r := range s.reg.all() {
		if r.group != group || r.version != version || r.undiscovered {
			continue
		}
		list.Resources = append(list.Resources, wire.APIResource{
			Name: r.plural, SingularName: r.singular, Namespaced: r.namespaced, Kind: r.kind,
			Verbs: r.verbs(), ShortNames: r.shortNames, Categories: r.categories,
		})
		subs := len(list.Resources)
		if r.isNamespaces() {
			list.Resources = append(list.Resources, wire.APIResource{
				Name: r.plural + "/finalize", Kind: r.kind, Verbs: []string{"update"},
			})
		}
		if r.hasStatus {
			list.Resources = append(list.Resources, wire.APIResource{
				Name: r.plural + "/status", Namespaced: r.namespaced, Kind: r.kind,
				Verbs: []string{"get", "patch", "update"},
			})
		}
		if r.scale != nil {
			list.Resources = append(list.Resources, scaleDiscovery(r))
		}
		if r.group == "" && r.plural == "serviceaccounts" && s.tokens != nil {
			list.Resources = append(list.Resources, tokenDiscovery())
		}
		for _, sub := range r.subresources {
			list.Resources = append(list.Resources, subDiscovery(r, sub))
		}
		list.Resources = connectDiscovery(list.Resources, r) // podsub.go
		// kube lists a built-in's subresources by name (a custom
		// resource's: status, then scale).
		if r.crd == "" {
			slices.SortStableFunc(list.Resources[subs:], func(a, b wire.APIResource) int { return strings.Compare(a.Name, b.Name) })
		}
	}
	return list, len(list.Resources) > 0
}
