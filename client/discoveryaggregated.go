package client

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/wire"
)

// aggregatedContentType is aggregated discovery v2, the one document per
// /api and /apis that lists every group, version and resource. Its
// parameters must come in this order in an Accept header.
const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// aggregatedList is apidiscovery.k8s.io/v2 APIGroupDiscoveryList, with the
// fields discovery needs.
type aggregatedList struct {
	Items []aggregatedGroup `json:"items"`
}

// aggregatedGroup is one group; the core group's name is "".
type aggregatedGroup struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	// Versions are in order of preference.
	Versions []aggregatedVersion `json:"versions"`
}

type aggregatedVersion struct {
	Version   string               `json:"version"`
	Resources []aggregatedResource `json:"resources"`
	// Freshness is "Current", or "Stale" when the server could not refresh
	// the version (an aggregated API server that is down).
	Freshness string `json:"freshness"`
}

type aggregatedResource struct {
	Resource         string                  `json:"resource"`
	ResponseKind     *aggregatedKind         `json:"responseKind"`
	Scope            string                  `json:"scope"` // "Cluster" or "Namespaced"
	SingularResource string                  `json:"singularResource"`
	Verbs            []string                `json:"verbs"`
	ShortNames       []string                `json:"shortNames"`
	Categories       []string                `json:"categories"`
	Subresources     []aggregatedSubresource `json:"subresources"`
}

type aggregatedSubresource struct {
	Subresource  string          `json:"subresource"`
	ResponseKind *aggregatedKind `json:"responseKind"`
	Verbs        []string        `json:"verbs"`
}

type aggregatedKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func (k *aggregatedKind) kind() string {
	if k == nil {
		return ""
	}
	return k.Kind
}

// decodeAggregated decodes an aggregated discovery document.
func decodeAggregated(body []byte) (*aggregatedList, error) {
	var l aggregatedList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// resourceLists converts l to legacy lists, one per group version that
// keep accepts, in l's order; stale versions are left out and returned as
// errors.
func (l *aggregatedList) resourceLists(keep func(gv string) bool) (lists []wire.APIResourceList, stale []error) {
	for _, g := range l.Items {
		for _, v := range g.Versions {
			if v.Version == "" || strings.Contains(v.Version, "/") || strings.Contains(g.Metadata.Name, "/") {
				continue // malformed: no path can be built from it
			}
			gv := v.Version
			if g.Metadata.Name != "" {
				gv = g.Metadata.Name + "/" + v.Version
			}
			if !keep(gv) {
				continue
			}
			if v.Freshness == "Stale" {
				stale = append(stale, fmt.Errorf("%s: stale in aggregated discovery", gv))
				continue
			}
			list := wire.APIResourceList{
				TypeMeta:     wire.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: gv,
				Resources:    []wire.APIResource{},
			}
			for _, r := range v.Resources {
				if r.Resource == "" || strings.Contains(r.Resource, "/") {
					continue
				}
				namespaced := r.Scope == "Namespaced"
				list.Resources = append(list.Resources, wire.APIResource{
					Name: r.Resource, SingularName: r.SingularResource, Namespaced: namespaced,
					Kind: r.ResponseKind.kind(), Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
				})
				for _, s := range r.Subresources {
					if s.Subresource == "" || strings.Contains(s.Subresource, "/") {
						continue
					}
					list.Resources = append(list.Resources, wire.APIResource{
						Name: r.Resource + "/" + s.Subresource, Namespaced: namespaced,
						Kind: s.ResponseKind.kind(), Verbs: s.Verbs,
					})
				}
			}
			lists = append(lists, list)
		}
	}
	return lists, stale
}
