package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/wire"
)

// finalizerEstimateSeconds is kube's estimate of how long content held by
// finalizers takes to go.
const finalizerEstimateSeconds = 15

// errGroupVersion: discovery named a group version that does not parse.
var errGroupVersion = errors.New("controllers: unparsable group version")

// contentDeleter deletes everything in a namespace, as kube's
// namespacedResourcesDeleter does: every namespaced resource the server
// discovers with the delete verb, pods first.
type contentDeleter struct {
	t   *term
	log *slog.Logger
}

// deletable is one resource to empty, and which collection verbs it has.
type deletable struct {
	gvr                    client.GroupVersionResource
	list, deleteCollection bool
}

// label is how kube names a resource in conditions: "configmaps." for
// the core group, "widgets.example.com" otherwise.
func (r deletable) label() string { return r.gvr.Resource + "." + r.gvr.Group }

// contentLeft is what remains of one resource after a pass.
type contentLeft struct {
	estimate   int64 // seconds
	remaining  int
	finalizers map[string]int
}

// deleteAll makes one pass over ns's content and records its findings in
// ns's conditions. It returns an estimate in seconds of when what remains
// will be gone (0: nothing remains), the namespace as last written, and
// the errors of the pass joined.
func (d *contentDeleter) deleteAll(ctx context.Context, ns u) (int64, u, error) {
	var cu conditionUpdater
	var errs []error
	lists, err := d.t.c.ServerResources(ctx)
	if err != nil {
		if len(lists) == 0 {
			return 0, ns, err
		}
		errs = append(errs, err)
		cu.discoveryFailed(err)
	}
	resources, err := deletableNamespaced(lists)
	if err != nil {
		errs = append(errs, err)
		cu.groupVersionParsingFailed(err)
	}
	deletedAt, _ := time.Parse(time.RFC3339, mustString(ns, "metadata", "deletionTimestamp"))
	var estimate int64
	byResource, byFinalizer := map[string]int{}, map[string]int{}
	pass := func(r deletable) {
		left, err := d.deleteResource(ctx, r, ns.GetName(), deletedAt)
		if err != nil {
			errs = append(errs, err)
			cu.deleteContentFailed(err)
		}
		estimate = max(estimate, left.estimate)
		if left.remaining > 0 {
			byResource[r.label()] = left.remaining
			for f, n := range left.finalizers {
				byFinalizer[f] += n
			}
		}
	}
	// Pods first: the rest waits until they are gone, as their
	// controllers may still use it.
	if i := slices.IndexFunc(resources, func(r deletable) bool { return r.gvr == gvrPods }); i >= 0 {
		pods := resources[i]
		resources = slices.Delete(resources, i, i+1)
		pass(pods)
		if byResource[pods.label()] > 0 {
			return estimate, d.updateConditions(ctx, ns, &cu), errors.Join(errs...)
		}
	}
	for _, r := range resources {
		pass(r)
	}
	cu.remaining(byResource, byFinalizer)
	return estimate, d.updateConditions(ctx, ns, &cu), errors.Join(errs...)
}

// updateConditions writes the pass's conditions to ns's status if they
// changed it; a failed write is logged (the next pass writes them again).
func (d *contentDeleter) updateConditions(ctx context.Context, ns u, cu *conditionUpdater) u {
	next := ns.DeepCopy()
	if !cu.apply(next, time.Now()) {
		return ns
	}
	out, err := putNamespace(ctx, d.t.c, next, "status")
	if err != nil {
		d.log.Warn("couldn't update status conditions of namespace", "namespace", ns.GetName(), "err", err)
		return ns
	}
	return out
}

// deletableNamespaced picks, from discovery (each group's preferred
// version first), the namespaced resources with the delete verb, one
// version of each, subresources left out.
func deletableNamespaced(lists []wire.APIResourceList) ([]deletable, error) {
	var out []deletable
	var bad []string
	seen := map[[2]string]bool{}
	for _, l := range lists {
		group, version, ok := parseGroupVersion(l.GroupVersion)
		if !ok {
			bad = append(bad, l.GroupVersion)
			continue
		}
		for _, r := range l.Resources {
			if !r.Namespaced || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			if seen[[2]string{group, r.Name}] {
				continue
			}
			seen[[2]string{group, r.Name}] = true
			out = append(out, deletable{
				gvr:              client.GroupVersionResource{Group: group, Version: version, Resource: r.Name},
				list:             slices.Contains(r.Verbs, "list"),
				deleteCollection: slices.Contains(r.Verbs, "deletecollection"),
			})
		}
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("%w: %s", errGroupVersion, strings.Join(bad, ", "))
	}
	return out, nil
}

// parseGroupVersion splits "group/version" or "version" (the core group).
func parseGroupVersion(gv string) (group, version string, ok bool) {
	if gv == "" {
		return "", "", false
	}
	group, version, found := strings.Cut(gv, "/")
	if !found {
		return "", gv, true
	}
	return group, version, group != "" && version != "" && !strings.Contains(version, "/")
}

// deleteResource deletes r's objects in ns (by collection where it can,
// else one by one, background propagation) and reports what remains.
func (d *contentDeleter) deleteResource(ctx context.Context, r deletable, ns string, deletedAt time.Time) (contentLeft, error) {
	var left contentLeft
	if r.gvr == gvrPods {
		est, err := d.podsEstimate(ctx, ns, deletedAt)
		if err != nil {
			return left, err
		}
		left.estimate = est
	}
	res := d.t.resource(r.gvr).Namespace(ns)
	collected := false
	if r.deleteCollection {
		// Background, as kube's namespace controller asks: no orphan
		// finalizer on what it deletes generically.
		err := res.DeleteCollection(ctx, backgroundDelete(), wire.ListOptions{})
		switch {
		case err == nil:
			collected = true
		case !unsupported(err):
			return left, err
		}
	}
	if !collected && r.list {
		if err := d.deleteEach(ctx, res); err != nil {
			return left, err
		}
	}
	if !r.list {
		return left, nil
	}
	list, err := res.ListAll(ctx, wire.ListOptions{})
	if unsupported(err) {
		return left, nil
	}
	if err != nil {
		return left, err
	}
	if len(list.Items) == 0 {
		return contentLeft{}, nil
	}
	left.remaining = len(list.Items)
	left.finalizers = map[string]int{}
	for _, obj := range list.Items {
		fins, _ := nested[[]any](obj, "metadata", "finalizers")
		for _, f := range fins {
			if s, ok := f.(string); ok {
				left.finalizers[s]++
			}
		}
	}
	switch {
	case left.estimate != 0:
		return left, nil
	case len(left.finalizers) > 0:
		left.estimate = finalizerEstimateSeconds
		return left, nil
	}
	return left, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %s/%s, Resource=%s",
		ns, r.gvr.Group, r.gvr.Version, r.gvr.Resource)
}

// deleteEach deletes every object res lists, one by one.
func (d *contentDeleter) deleteEach(ctx context.Context, res *client.Resource[u]) error {
	list, err := res.ListAll(ctx, wire.ListOptions{})
	if unsupported(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, obj := range list.Items {
		_, err := res.Delete(ctx, obj.GetName(), backgroundDelete())
		if err != nil && !unsupported(err) {
			return err
		}
	}
	return nil
}

// backgroundDelete is the delete options of the controller's deletes.
func backgroundDelete() wire.DeleteOptions {
	background := "Background"
	return wire.DeleteOptions{PropagationPolicy: &background}
}

// podsEstimate is the longest termination grace period of ns's running
// pods, or 0 once that long has passed since the namespace's deletion.
func (d *contentDeleter) podsEstimate(ctx context.Context, ns string, deletedAt time.Time) (int64, error) {
	list, err := d.t.resource(gvrPods).Namespace(ns).ListAll(ctx, wire.ListOptions{})
	if err != nil {
		return 0, err
	}
	var estimate int64
	for _, pod := range list.Items {
		if phase := mustString(pod, "status", "phase"); phase == "Succeeded" || phase == "Failed" {
			continue
		}
		if g, ok := nested[json.Number](pod, "spec", "terminationGracePeriodSeconds"); ok {
			if n, err := g.Int64(); err == nil {
				estimate = max(estimate, n)
			}
		}
	}
	if time.Since(deletedAt) >= time.Duration(estimate)*time.Second {
		return 0, nil
	}
	return estimate, nil
}

// unsupported: the server does not serve that verb or resource (any
// more): 405, or 404 as when a CRD went meanwhile.
func unsupported(err error) bool {
	return err != nil && (client.IsNotFound(err) || wire.CodeOf(err) == http.StatusMethodNotAllowed)
}

func mustString(obj u, path ...string) string {
	s, _ := nested[string](obj, path...)
	return s
}
