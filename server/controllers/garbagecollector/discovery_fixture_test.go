package garbagecollector

import "github.com/listwatch/listwatch/wire"

// discoveryFixture is what ServerResources returns: each group's preferred
// version first.
func discoveryFixture() []wire.APIResourceList {
	all := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	return []wire.APIResourceList{
		{GroupVersion: "v1", Resources: []wire.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: all},
			{Name: "events", Namespaced: true, Kind: "Event", Verbs: all},
			{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "patch"}},
			{Name: "readonly", Kind: "ReadOnly", Verbs: []string{"get", "list", "watch"}},
		}},
		{GroupVersion: "example.com/v2", Resources: []wire.APIResource{
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: all},
		}},
		{GroupVersion: "example.com/v1", Resources: []wire.APIResource{
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: all},
		}},
		{GroupVersion: "events.k8s.io/v1", Resources: []wire.APIResource{
			{Name: "events", Namespaced: true, Kind: "Event", Verbs: all},
		}},
	}
}
