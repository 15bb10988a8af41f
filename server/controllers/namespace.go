package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// finalizerKubernetes is the namespace controller's spec finalizer.
const finalizerKubernetes = "kubernetes"

// namespaceWorkers is kube-controller-manager's --concurrent-namespace-syncs
// default.
const namespaceWorkers = 10

// errUIDChanged: the namespace was deleted and made again while a write
// to it was retried.
var errUIDChanged = errors.New("controllers: namespace uid has changed across retries")

// namespaceController empties Terminating namespaces and finalizes them,
// as kube's namespace controller does.
type namespaceController struct {
	c             *client.Client
	namespaces    *client.Resource[u]
	deleter       *contentDeleter
	finalizerWait time.Duration
	log           *slog.Logger
}

func startNamespaceController(t *term) error {
	inf, err := t.namespaceInformer()
	if err != nil {
		return err
	}
	log := t.host.log.With("controller", NamespaceController)
	nc := &namespaceController{
		c:             t.c,
		namespaces:    t.resource(gvrNamespaces),
		finalizerWait: t.host.cfg.FinalizerWait,
		log:           log,
		deleter:       &contentDeleter{t: t, log: log},
	}
	var reg *informer.Registration[u]
	ctl, err := t.controller(NamespaceController, nc, namespaceWorkers, func() bool { return reg.HasSynced() })
	if err != nil {
		return err
	}
	enqueue := func(ns u) {
		if deleting(ns) {
			ctl.Enqueue(ns.GetName())
		}
	}
	reg, err = inf.AddEventHandler(informer.HandlerFuncs[u]{
		AddFunc:    func(ns u, _ bool) { enqueue(ns) },
		UpdateFunc: func(_, ns u) { enqueue(ns) },
	}, informer.HandlerOptions{ResyncPeriod: 5 * time.Minute})
	return err
}

func deleting(obj u) bool {
	ts, _ := nested[string](obj, "metadata", "deletionTimestamp")
	return ts != ""
}

// Reconcile brings namespace key one step nearer to gone: Terminating
// phase, content deleted, kubernetes finalizer removed. Content that
// remains (held by finalizers) requeues the key.
func (n *namespaceController) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, err := n.namespaces.Get(ctx, key)
	if client.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil || !deleting(ns) {
		return controller.Result{}, err
	}
	ns, err = n.retryOnConflict(ctx, ns, n.markTerminating)
	if client.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil || !deleting(ns) || len(specFinalizers(ns)) == 0 {
		return controller.Result{}, err
	}
	estimate, ns, err := n.deleter.deleteAll(ctx, ns)
	if err != nil {
		return controller.Result{}, err
	}
	if estimate > 0 {
		wait := time.Duration(estimate/2+1) * time.Second
		if estimate == finalizerEstimateSeconds {
			wait = n.finalizerWait
		}
		n.log.Debug("content remains in namespace", "namespace", key, "wait", wait)
		return controller.Result{RequeueAfter: wait}, nil
	}
	if _, err := n.retryOnConflict(ctx, ns, n.finalize); err != nil && !client.IsNotFound(err) {
		return controller.Result{}, err
	}
	n.log.Info("namespace finalized", "namespace", key)
	return controller.Result{}, nil
}

// retryOnConflict applies fn to ns, and on a conflict to the namespace
// read again, as long as it is the same namespace (uid).
func (n *namespaceController) retryOnConflict(ctx context.Context, ns u, fn func(context.Context, u) (u, error)) (u, error) {
	for {
		out, err := fn(ctx, ns)
		if !client.IsConflict(err) {
			return out, err
		}
		latest, err := n.namespaces.Get(ctx, ns.GetName())
		if err != nil {
			return nil, err
		}
		if latest.GetUID() != ns.GetUID() {
			return nil, errUIDChanged
		}
		ns = latest
	}
}

// markTerminating sets status.phase Terminating if it is not yet.
func (n *namespaceController) markTerminating(ctx context.Context, ns u) (u, error) {
	if phase, _ := nested[string](ns, "status", "phase"); phase == "Terminating" {
		return ns, nil
	}
	ns = ns.DeepCopy()
	ns.SetNested("Terminating", "status", "phase")
	return putNamespace(ctx, n.c, ns, "status")
}

// finalize removes the kubernetes finalizer through /finalize.
func (n *namespaceController) finalize(ctx context.Context, ns u) (u, error) {
	var keep []any
	for _, f := range specFinalizers(ns) {
		if f != finalizerKubernetes && !slices.Contains(keep, any(f)) {
			keep = append(keep, f)
		}
	}
	ns = ns.DeepCopy()
	ns.SetNested(keep, "spec", "finalizers")
	if keep == nil {
		ns.SetNested([]any{}, "spec", "finalizers")
	}
	return putNamespace(ctx, n.c, ns, "finalize")
}

// putNamespace writes ns to its subresource sub (status, finalize) and
// returns what the server stored.
func putNamespace(ctx context.Context, c *client.Client, ns u, sub string) (u, error) {
	body, err := json.Marshal(ns)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(ctx, "PUT", "/api/v1/namespaces/"+ns.GetName()+"/"+sub, nil, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &object.Unstructured{}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("controllers: decoding namespace %s/%s: %w", ns.GetName(), sub, err)
	}
	return out, nil
}

// specFinalizers are a namespace's spec.finalizers.
func specFinalizers(ns u) []string {
	raw, _ := nested[[]any](ns, "spec", "finalizers")
	out := make([]string, 0, len(raw))
	for _, f := range raw {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
