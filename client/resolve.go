package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/wire"
)

// ErrUnknownResource: a resource name is malformed, or matches no
// collection the server serves that can be listed and watched.
var ErrUnknownResource = errors.New("client: unknown resource")

// ResolveResource finds the collection name stands for, as kubectl does:
// a plural, singular or short name or a kind ("pods", "pod", "po",
// "Pod"), case-insensitive, optionally qualified as resource.group
// ("deployments.apps", "widgets.example.com") or resource.version.group
// ("deployments.v1.apps"; "configmaps.v1" for the core group). It reads
// discovery as ServerResources does, but only the group versions a
// qualified name can be in. It reports whether the resource is
// namespaced.
//
// Plural and singular names and kinds win over short names; among equals
// the core group comes first, then groups in the server's order, each
// group's preferred version first. Only resources that can be listed and
// watched resolve; subresources ("pods/log") never do. Errors wrap
// ErrUnknownResource; when some group versions could not be read and
// nothing matched, the error wraps ErrPartialDiscovery too.
func (c *Client) ResolveResource(ctx context.Context, name string) (GroupVersionResource, bool, error) {
	ref, err := parseResourceName(name)
	if err != nil {
		return GroupVersionResource{}, false, err
	}
	lists, derr := c.discover(ctx, ref.matchesGroupVersion)
	if derr != nil && !errors.Is(derr, ErrPartialDiscovery) {
		return GroupVersionResource{}, false, derr
	}
	gvr, namespaced, err := findResource(ref, lists, name)
	if err != nil && derr != nil {
		return gvr, namespaced, fmt.Errorf("%w (%w)", err, derr)
	}
	return gvr, namespaced, err
}

// FindResource resolves name as ResolveResource does, in discovery lists
// already read (by ServerResources, or from a cache), in their order.
func FindResource(lists []wire.APIResourceList, name string) (GroupVersionResource, bool, error) {
	ref, err := parseResourceName(name)
	if err != nil {
		return GroupVersionResource{}, false, err
	}
	return findResource(ref, lists, name)
}

// resourceRef is a parsed resource name: "pods", "deploy",
// "deployments.apps", "deployments.v1.apps".
type resourceRef struct {
	name string // lowercased plural, singular or short name, or kind
	// rest is what followed the first '.': a group, or version.group.
	rest string
}

// parseResourceName splits and checks a resource name.
func parseResourceName(arg string) (resourceRef, error) {
	s := strings.ToLower(strings.TrimSpace(arg))
	name, rest, _ := strings.Cut(s, ".")
	if name == "" || strings.ContainsAny(s, "/ \t\n") || strings.HasSuffix(s, ".") || strings.Contains(rest, "..") {
		return resourceRef{}, fmt.Errorf("%w: invalid resource name %q", ErrUnknownResource, arg)
	}
	return resourceRef{name: name, rest: rest}, nil
}

// matchesGroupVersion reports whether a discovery list for gv ("v1",
// "apps/v1") can hold ref: any when ref names no group, else ref.rest is
// the group, or version.group.
func (ref resourceRef) matchesGroupVersion(gv string) bool {
	if ref.rest == "" {
		return true
	}
	group, version := splitGroupVersion(gv)
	return ref.rest == group || ref.rest == version+"."+group || (group == "" && ref.rest == version)
}

// splitGroupVersion splits "apps/v1" into "apps" and "v1", and "v1" into
// the core group "" and "v1".
func splitGroupVersion(gv string) (group, version string) {
	group, version, found := strings.Cut(gv, "/")
	if !found {
		return "", gv
	}
	return group, version
}

// findResource picks ref's resource from lists: plural or singular names
// and kinds first, then short names, in list order. arg is only for the
// error message.
func findResource(ref resourceRef, lists []wire.APIResourceList, arg string) (GroupVersionResource, bool, error) {
	byName := func(r wire.APIResource) bool {
		return strings.EqualFold(r.Name, ref.name) || strings.EqualFold(r.SingularName, ref.name) || strings.EqualFold(r.Kind, ref.name)
	}
	byShortName := func(r wire.APIResource) bool {
		return slices.ContainsFunc(r.ShortNames, func(s string) bool { return strings.EqualFold(s, ref.name) })
	}
	for _, match := range []func(wire.APIResource) bool{byName, byShortName} {
		for _, l := range lists {
			if !ref.matchesGroupVersion(l.GroupVersion) {
				continue
			}
			for _, r := range l.Resources {
				if strings.Contains(r.Name, "/") || !match(r) {
					continue // subresources (pods/log) are not collections
				}
				if !slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "list") {
					return GroupVersionResource{}, false, fmt.Errorf("%w: %s cannot be listed and watched (verbs %v)", ErrUnknownResource, r.Name, r.Verbs)
				}
				group, version := splitGroupVersion(l.GroupVersion)
				return GroupVersionResource{Group: group, Version: version, Resource: r.Name}, r.Namespaced, nil
			}
		}
	}
	return GroupVersionResource{}, false, fmt.Errorf("%w: the server doesn't have a resource type %q", ErrUnknownResource, arg)
}
