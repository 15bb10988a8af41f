package controllers

import (
	"context"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// defaultServiceAccount is the ServiceAccount every active namespace has.
const defaultServiceAccount = "default"

// serviceAccountController makes the default ServiceAccount of every
// active namespace, and makes it again when it is deleted, as kube's
// serviceaccount-controller does.
type serviceAccountController struct {
	namespaces informer.Lister[u]
	accounts   informer.Lister[u]
	res        *client.Resource[u]
}

func startServiceAccountController(t *term) error {
	nsInf, err := t.namespaceInformer()
	if err != nil {
		return err
	}
	saInf, err := t.informer(gvrServiceAccounts, "metadata.name="+defaultServiceAccount)
	if err != nil {
		return err
	}
	sc := &serviceAccountController{namespaces: nsInf.Lister(), accounts: saInf.Lister(), res: t.resource(gvrServiceAccounts)}
	var nsReg, saReg *informer.Registration[u]
	ctl, err := t.controller(ServiceAccountController, sc, 2,
		func() bool { return nsReg.HasSynced() }, func() bool { return saReg.HasSynced() })
	if err != nil {
		return err
	}
	if nsReg, err = nsInf.AddEventHandler(namespaceEvents(ctl), informer.HandlerOptions{}); err != nil {
		return err
	}
	saReg, err = saInf.AddEventHandler(informer.HandlerFuncs[u]{
		DeleteFunc: func(sa u, _ bool) { ctl.Enqueue(sa.GetNamespace()) },
	}, informer.HandlerOptions{})
	return err
}

// namespaceEvents enqueues the name of every namespace added or changed.
func namespaceEvents(ctl *controller.Controller) informer.Handler[u] {
	return informer.HandlerFuncs[u]{
		AddFunc:    func(ns u, _ bool) { ctl.Enqueue(ns.GetName()) },
		UpdateFunc: func(_, ns u) { ctl.Enqueue(ns.GetName()) },
	}
}

// active: namespace name exists and is not being deleted.
func active(namespaces informer.Lister[u], name string) bool {
	ns, ok := namespaces.Get("", name)
	return ok && !deleting(ns) && mustString(ns, "status", "phase") != "Terminating"
}

// Reconcile makes the default ServiceAccount of namespace key if it is
// active and has none.
func (s *serviceAccountController) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	if !active(s.namespaces, key) {
		return controller.Result{}, nil
	}
	if _, ok := s.accounts.Get(key, defaultServiceAccount); ok {
		return controller.Result{}, nil
	}
	sa := &object.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount"}}
	sa.SetName(defaultServiceAccount)
	_, err := s.res.Namespace(key).Create(ctx, sa)
	if client.IsAlreadyExists(err) || createRefusedByNamespace(err) {
		return controller.Result{}, nil
	}
	return controller.Result{}, err
}

// createRefusedByNamespace: the namespace went, or is terminating, since
// the cache said otherwise; its controller's events will tell.
func createRefusedByNamespace(err error) bool {
	return client.IsNotFound(err) || client.IsForbidden(err)
}
