package controllers

import (
	"fmt"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/run"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/workqueue"
)

// u is the object type every controller here works with: decoded JSON.
type u = *object.Unstructured

// term is one term of leadership: the informers and controllers started
// for it, on one run.Group, all ended when it ends.
type term struct {
	host *Host
	c    *client.Client
	g    run.Group

	// namespaces is shared by the controllers that watch namespaces.
	namespaces *informer.Informer[u]
}

var (
	gvrNamespaces      = client.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrServiceAccounts = client.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	gvrConfigMaps      = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrPods            = client.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// resource is a client of gvr, JSON only (Unstructured has no protobuf).
func (t *term) resource(gvr client.GroupVersionResource) *client.Resource[u] {
	return client.NewResource[u](t.c, gvr).JSONOnly()
}

// informer starts an informer of gvr in every namespace, narrowed by
// fieldSelector, on the term's group.
func (t *term) informer(gvr client.GroupVersionResource, fieldSelector string) (*informer.Informer[u], error) {
	lw := informer.NewListWatchFromClient[u](t.resource(gvr), "", fieldSelector)
	inf, err := informer.New(lw, informer.Options[u]{
		Transform: informer.DropManagedFields,
		Reflector: informer.ReflectorOptions{
			Name:    "controllers/" + gvr.Resource,
			Metrics: t.host.metrics,
			Logger:  t.host.log.With("informer", gvr.String()),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("controllers: informer of %s: %w", gvr, err)
	}
	t.g.Go("informer "+gvr.String(), inf.Run)
	return inf, nil
}

// namespaceInformer is the term's one informer of namespaces.
func (t *term) namespaceInformer() (*informer.Informer[u], error) {
	if t.namespaces != nil {
		return t.namespaces, nil
	}
	inf, err := t.informer(gvrNamespaces, "")
	t.namespaces = inf
	return inf, err
}

// controller builds a controller named name over r, started on the
// term's group once synced reports true.
func (t *term) controller(name string, r controller.Reconciler, workers int, synced ...func() bool) (*controller.Controller, error) {
	ctl, err := controller.New(r, controller.Options{
		Name: name,
		// kube's controllers' limiter, with retries capped at a minute.
		RateLimiter: workqueue.MaxOf(
			workqueue.NewExponentialBackoff[string](5*time.Millisecond, time.Minute),
			workqueue.NewTokenBucket[string](10, 100)),
		Workers:    workers,
		MaxRetries: -1, // a key is retried until it reconciles, as kube's controllers do
		Logger:     t.host.log,
		Registerer: t.host.cfg.Registerer,
		HasSynced:  synced,
	})
	if err != nil {
		return nil, err
	}
	t.g.Go(name, ctl.Run)
	return ctl, nil
}
