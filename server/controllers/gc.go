package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// The garbage collector deletes, with background propagation, every
// object whose owners (metadata.ownerReferences, by uid) are all gone,
// and removes the references to gone owners from objects that keep
// another, as kube's garbage collector does for background deletion. It
// watches every resource that can be listed, watched and deleted (the
// metadata only), found by discovery at start, again every
// gcRediscoverPeriod and whenever a CRD changes.
//
// Left to do (kube does them): the orphan and foregroundDeletion
// finalizers (orphaning dependents, deleting blockOwnerDeletion
// dependents before their owner), and the events kube records for
// invalid owner references.

// gcWorkers is kube-controller-manager's --concurrent-gc-syncs default.
const gcWorkers = 20

// gcRediscoverPeriod is how often the collector looks for resources
// that appeared or went (kube: 30s).
const gcRediscoverPeriod = 30 * time.Second

// errUnknownOwnerKind: an owner reference names a kind no served
// resource has (yet); the dependent is looked at again later.
var errUnknownOwnerKind = errors.New("controllers: owner kind not served")

// gcResource is a served resource as the collector knows it.
type gcResource struct {
	gvr        client.GroupVersionResource
	namespaced bool
}

// ownerRef is one metadata.ownerReferences entry.
type ownerRef struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

type garbageCollector struct {
	t   *term
	log *slog.Logger
	ctl *controller.Controller
	// kick asks for a rediscovery (a CRD changed); buffered, one pending.
	kick chan struct{}

	mu sync.Mutex
	// Guarded by mu:
	// kinds maps "apiVersion/Kind" to the resource serving it.
	kinds map[string]gcResource
	// watched holds the informer of each watched resource, by group and
	// resource, and how to stop it.
	watched map[[2]string]*gcWatch
	// dependents maps an owner uid to the keys of the objects naming it.
	dependents map[string]map[string]bool
	// discovered: the first discovery is done.
	discovered bool
}

type gcWatch struct {
	res    gcResource
	stop   context.CancelFunc
	synced func() bool
}

func startGarbageCollector(t *term) error {
	gc := &garbageCollector{
		t: t, log: t.host.log.With("controller", GarbageCollector),
		kick:       make(chan struct{}, 1),
		kinds:      map[string]gcResource{},
		watched:    map[[2]string]*gcWatch{},
		dependents: map[string]map[string]bool{},
	}
	var err error
	gc.ctl, err = t.controller(GarbageCollector, gc, gcWorkers, gc.synced)
	if err != nil {
		return err
	}
	t.g.Go("garbage collector discovery", gc.discoverLoop)
	return nil
}

// synced: the first discovery is done and its informers have synced.
func (gc *garbageCollector) synced() bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if !gc.discovered {
		return false
	}
	for _, w := range gc.watched {
		if !w.synced() {
			return false
		}
	}
	return true
}

// discoverLoop watches what discovery serves until ctx ends.
func (gc *garbageCollector) discoverLoop(ctx context.Context) error {
	tick := time.NewTicker(gcRediscoverPeriod)
	defer tick.Stop()
	for {
		if err := gc.discover(ctx); err != nil && ctx.Err() == nil {
			gc.log.Warn("garbage collector discovery incomplete", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-gc.kick:
		}
	}
}

// discover reads discovery, starts informers of new resources and stops
// those of resources no longer served.
func (gc *garbageCollector) discover(ctx context.Context) error {
	lists, err := gc.t.c.ServerResources(ctx)
	if len(lists) == 0 {
		return err
	}
	kinds := map[string]gcResource{}
	want := map[[2]string]gcResource{}
	for _, l := range lists {
		group, version, ok := parseGroupVersion(l.GroupVersion)
		if !ok {
			continue
		}
		for _, r := range l.Resources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			res := gcResource{client.GroupVersionResource{Group: group, Version: version, Resource: r.Name}, r.Namespaced}
			if _, ok := kinds[l.GroupVersion+"/"+r.Kind]; !ok {
				kinds[l.GroupVersion+"/"+r.Kind] = res
			}
			k := [2]string{group, r.Name}
			if _, seen := want[k]; !seen && hasVerbs(r.Verbs, "list", "watch", "delete") && r.Name != "events" {
				want[k] = res
			}
		}
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	gc.kinds = kinds
	for k, w := range gc.watched {
		if nw, ok := want[k]; !ok || nw.gvr != w.res.gvr {
			w.stop()
			delete(gc.watched, k)
		}
	}
	for k, res := range want {
		if _, ok := gc.watched[k]; ok {
			continue
		}
		w, werr := gc.watchLocked(ctx, res)
		if werr != nil {
			err = errors.Join(err, werr)
			continue
		}
		gc.watched[k] = w
	}
	gc.discovered = true
	return err
}

func hasVerbs(verbs []string, want ...string) bool {
	for _, v := range want {
		if !slices.Contains(verbs, v) {
			return false
		}
	}
	return true
}

// watchLocked starts an informer of res's metadata that feeds the graph.
func (gc *garbageCollector) watchLocked(ctx context.Context, res gcResource) (*gcWatch, error) {
	lw := informer.NewListWatchFromClient[u](gc.t.resource(res.gvr), "", "")
	inf, err := informer.New(lw, informer.Options[u]{
		Transform: metadataOnly,
		Reflector: informer.ReflectorOptions{
			Name:    "garbagecollector/" + res.gvr.String(),
			Metrics: gc.t.host.metrics,
			Logger:  gc.log.With("informer", res.gvr.String()),
		},
	})
	if err != nil {
		return nil, err
	}
	isCRDs := res.gvr.Group == "apiextensions.k8s.io" && res.gvr.Resource == "customresourcedefinitions"
	reg, err := inf.AddEventHandler(informer.HandlerFuncs[u]{
		AddFunc: func(obj u, _ bool) {
			gc.observe(res, obj)
			if isCRDs {
				gc.rediscover()
			}
		},
		UpdateFunc: func(_, obj u) { gc.observe(res, obj) },
		DeleteFunc: func(obj u, _ bool) {
			gc.forget(res, obj)
			if isCRDs {
				gc.rediscover()
			}
		},
	}, informer.HandlerOptions{})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	if !gc.t.g.Go("garbage collector informer "+res.gvr.String(), func(context.Context) error {
		defer cancel()
		return inf.Run(wctx)
	}) {
		cancel()
	}
	return &gcWatch{res: res, stop: cancel, synced: reg.HasSynced}, nil
}

func (gc *garbageCollector) rediscover() {
	select {
	case gc.kick <- struct{}{}:
	default:
	}
}

// metadataOnly keeps what the collector reads of an object.
func metadataOnly(obj u) (u, error) {
	meta, _ := nested[map[string]any](obj, "metadata")
	keep := map[string]any{}
	for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "ownerReferences", "deletionTimestamp", "finalizers"} {
		if v, ok := meta[k]; ok {
			keep[k] = v
		}
	}
	return &object.Unstructured{Object: map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(), "metadata": keep}}, nil
}

// gcKey names an object for the queue: group/version/resource/ns/name.
func gcKey(res gcResource, obj u) string {
	g := res.gvr
	return g.Group + "/" + g.Version + "/" + g.Resource + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

func parseGCKey(key string) (client.GroupVersionResource, string, string, bool) {
	p := strings.Split(key, "/")
	if len(p) != 5 {
		return client.GroupVersionResource{}, "", "", false
	}
	return client.GroupVersionResource{Group: p[0], Version: p[1], Resource: p[2]}, p[3], p[4], true
}

func ownerRefs(obj u) []ownerRef {
	raw, ok := obj.Nested("metadata", "ownerReferences")
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var refs []ownerRef
	_ = json.Unmarshal(b, &refs)
	return refs
}

// observe records obj's owners and, if it has any, has it looked at.
func (gc *garbageCollector) observe(res gcResource, obj u) {
	refs := ownerRefs(obj)
	if len(refs) == 0 {
		return
	}
	key := gcKey(res, obj)
	gc.mu.Lock()
	for _, r := range refs {
		if gc.dependents[r.UID] == nil {
			gc.dependents[r.UID] = map[string]bool{}
		}
		gc.dependents[r.UID][key] = true
	}
	gc.mu.Unlock()
	gc.ctl.Enqueue(key)
}

// forget drops obj from the graph and has its dependents looked at.
func (gc *garbageCollector) forget(res gcResource, obj u) {
	key := gcKey(res, obj)
	gc.mu.Lock()
	for _, r := range ownerRefs(obj) {
		delete(gc.dependents[r.UID], key)
		if len(gc.dependents[r.UID]) == 0 {
			delete(gc.dependents, r.UID)
		}
	}
	deps := make([]string, 0, len(gc.dependents[object.UID(obj)]))
	for d := range gc.dependents[object.UID(obj)] {
		deps = append(deps, d)
	}
	gc.mu.Unlock()
	for _, d := range deps {
		gc.ctl.Enqueue(d)
	}
}

// Reconcile looks at one object with owners: deleted (background) when
// every owner is gone, its dangling references removed when some are.
func (gc *garbageCollector) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	gvr, ns, name, ok := parseGCKey(key)
	if !ok {
		return controller.Result{}, controller.TerminalError(fmt.Errorf("controllers: bad key %q", key))
	}
	r := gc.t.resource(gvr)
	if ns != "" {
		r = r.Namespace(ns)
	}
	obj, err := r.Get(ctx, name)
	if client.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil || deleting(obj) {
		return controller.Result{}, err
	}
	refs := ownerRefs(obj)
	if len(refs) == 0 {
		return controller.Result{}, nil
	}
	var solid, dangling []ownerRef
	for _, ref := range refs {
		exists, err := gc.ownerExists(ctx, ref, ns)
		if err != nil {
			return controller.Result{}, err
		}
		if exists {
			solid = append(solid, ref)
		} else {
			dangling = append(dangling, ref)
		}
	}
	switch {
	case len(dangling) == 0:
		return controller.Result{}, nil
	case len(solid) == 0:
		gc.log.Info("deleting object whose owners are gone", "object", key)
		background, uid := "Background", obj.GetUID()
		_, err := r.Delete(ctx, name, wire.DeleteOptions{
			Preconditions:     &wire.Preconditions{UID: &uid},
			PropagationPolicy: &background,
		})
		if client.IsNotFound(err) || client.IsConflict(err) {
			return controller.Result{}, nil // gone, or another object now
		}
		return controller.Result{}, err
	}
	return controller.Result{}, gc.removeDangling(ctx, r, obj, solid)
}

// ownerExists looks the owner up live: an object of ref's kind and name
// (in ns if that kind is namespaced) with ref's uid. A cluster-scoped
// object naming a namespaced kind cannot be resolved, and counts as
// owned, as in kube.
func (gc *garbageCollector) ownerExists(ctx context.Context, ref ownerRef, ns string) (bool, error) {
	gc.mu.Lock()
	res, ok := gc.kinds[ref.APIVersion+"/"+ref.Kind]
	gc.mu.Unlock()
	if !ok {
		return false, fmt.Errorf("%w: %s %s", errUnknownOwnerKind, ref.APIVersion, ref.Kind)
	}
	r := gc.t.resource(res.gvr)
	if res.namespaced {
		if ns == "" {
			return true, nil
		}
		r = r.Namespace(ns)
	}
	owner, err := r.Get(ctx, ref.Name)
	if client.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return owner.GetUID() == ref.UID, nil
}

// removeDangling leaves only the solid owner references on obj, if it is
// still the version read.
func (gc *garbageCollector) removeDangling(ctx context.Context, r *client.Resource[u], obj u, solid []ownerRef) error {
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": obj.GetUID()},
		{"op": "test", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()},
		{"op": "replace", "path": "/metadata/ownerReferences", "value": solid},
	})
	if err != nil {
		return err
	}
	_, err = r.Patch(ctx, obj.GetName(), client.JSONPatch, patch)
	if client.IsNotFound(err) {
		return nil
	}
	return err
}
