package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/listwatch/listwatch/wire"
)

// ErrPartialDiscovery: some group versions could not be read, or the
// server marked them stale; what could be read is returned with it.
var ErrPartialDiscovery = errors.New("client: discovery incomplete")

// discoveryAccept asks for aggregated discovery first and for the legacy
// documents after, as client-go does. A server without aggregated
// discovery (listwatch serve, old kube-apiservers) answers plain JSON.
const discoveryAccept = aggregatedContentType + ",application/json"

// maxDiscoveryBody caps one discovery document. A large cluster's
// aggregated document is a few MiB.
const maxDiscoveryBody = 64 << 20

// ServerResources reads what the server serves: one APIResourceList per
// group version, the core group first, then every group in the server's
// order with its preferred version first. Subresources appear as
// "pods/log", as in the legacy documents.
//
// It asks for aggregated discovery (apidiscovery.k8s.io/v2: two requests,
// /api and /apis) and, when the server does not offer it, reads the
// legacy documents: /api, /api/{version}, /apis and /apis/{group}/{version}
// for every version of every group. A group version that cannot be read,
// or that the server marks stale, is left out: the lists read are then
// returned with an error wrapping ErrPartialDiscovery. Any other error
// (the server refuses /api or /apis) returns no lists.
func (c *Client) ServerResources(ctx context.Context) ([]wire.APIResourceList, error) {
	return c.discover(ctx, func(string) bool { return true })
}

// discover is ServerResources limited to the group versions ("v1",
// "apps/v1") keep accepts; it reads no other legacy document.
func (c *Client) discover(ctx context.Context, keep func(gv string) bool) ([]wire.APIResourceList, error) {
	var lists []wire.APIResourceList
	var failed []error

	var versions wire.APIVersions
	agg, err := c.getDiscovery(ctx, "/api", &versions)
	if err != nil {
		return nil, fmt.Errorf("client: discovery /api: %w", err)
	}
	if agg != nil {
		l, stale := agg.resourceLists(keep)
		lists, failed = append(lists, l...), append(failed, stale...)
	} else {
		var gvs []string
		for _, v := range versions.Versions {
			if v != "" && !strings.Contains(v, "/") {
				gvs = append(gvs, v)
			}
		}
		if lists, failed, err = c.getResourceLists(ctx, "/api/", gvs, keep, lists, failed); err != nil {
			return nil, err
		}
	}

	var groups wire.APIGroupList
	agg, err = c.getDiscovery(ctx, "/apis", &groups)
	if err != nil {
		return nil, fmt.Errorf("client: discovery /apis: %w", err)
	}
	if agg != nil {
		l, stale := agg.resourceLists(keep)
		lists, failed = append(lists, l...), append(failed, stale...)
	} else {
		var gvs []string
		for _, g := range groups.Groups {
			gvs = append(gvs, preferredFirst(g)...)
		}
		if lists, failed, err = c.getResourceLists(ctx, "/apis/", gvs, keep, lists, failed); err != nil {
			return nil, err
		}
	}
	if len(failed) > 0 {
		return lists, fmt.Errorf("%w: %w", ErrPartialDiscovery, errors.Join(failed...))
	}
	return lists, nil
}

// preferredFirst lists g's well-formed group versions ("group/version"),
// the preferred one first, each once.
func preferredFirst(g wire.APIGroup) []string {
	var out []string
	add := func(gv string) {
		for _, have := range out {
			if have == gv {
				return
			}
		}
		if group, version, ok := strings.Cut(gv, "/"); ok && group != "" && version != "" && !strings.Contains(version, "/") {
			out = append(out, gv)
		}
	}
	add(g.PreferredVersion.GroupVersion)
	for _, v := range g.Versions {
		add(v.GroupVersion)
	}
	return out
}

// getResourceList reads the legacy APIResourceList at path, for gv.
func (c *Client) getResourceList(ctx context.Context, path, gv string) (wire.APIResourceList, error) {
	var l wire.APIResourceList
	if err := c.GetJSON(ctx, path, &l); err != nil {
		return l, fmt.Errorf("%s: %w", gv, err)
	}
	l.GroupVersion = gv // the paths of its resources are under gv, whatever it says
	return l, nil
}

// getDiscovery GETs path asking for aggregated discovery. It returns the
// aggregated document when the server answers with one, and otherwise
// decodes the plain JSON answer into legacy and returns nil.
func (c *Client) getDiscovery(ctx context.Context, path string, legacy any) (*aggregatedList, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: path, accept: discoveryAccept})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBody+1))
	if err != nil {
		return nil, fmt.Errorf("client: reading %s: %w", path, err)
	}
	if len(body) > maxDiscoveryBody {
		return nil, fmt.Errorf("client: %s larger than %d bytes", path, maxDiscoveryBody)
	}
	if isAggregated(resp.Header.Get("Content-Type")) {
		agg, err := decodeAggregated(body)
		if err != nil {
			return nil, fmt.Errorf("client: decoding %s: %w", path, err)
		}
		return agg, nil
	}
	if err := json.Unmarshal(body, legacy); err != nil {
		return nil, fmt.Errorf("client: decoding %s: %w", path, err)
	}
	return nil, nil
}

// isAggregated reports whether contentType is aggregated discovery v2,
// whatever the order of its parameters.
func isAggregated(contentType string) bool {
	base, params, err := mime.ParseMediaType(contentType)
	return err == nil && base == "application/json" && params["g"] == "apidiscovery.k8s.io" &&
		params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList"
}

// getResourceLists reads the legacy document of each group version gvs
// names (under prefix) that keep accepts, appending to lists, and the
// failure of each that could not be read to failed. Only the end of ctx
// stops it.
func (c *Client) getResourceLists(ctx context.Context, prefix string, gvs []string, keep func(string) bool,
	lists []wire.APIResourceList, failed []error) ([]wire.APIResourceList, []error, error) {
	for _, gv := range gvs {
		if !keep(gv) {
			continue
		}
		l, err := c.getResourceList(ctx, prefix+gv, gv)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			failed = append(failed, err)
			continue
		}
		lists = append(lists, l)
	}
	return lists, failed, nil
}
