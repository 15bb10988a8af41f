package controllers

import (
	"context"
	"maps"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// The ConfigMap kube's root-ca-certificate-publisher keeps in every
// namespace, and its annotation.
const (
	rootCAConfigMap       = "kube-root-ca.crt"
	descriptionAnnotation = "kubernetes.io/description"
	rootCADescription     = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// rootCAPublisher keeps kube-root-ca.crt, holding the server's CA as
// ca.crt, in every active namespace: made when missing, restored when
// changed.
type rootCAPublisher struct {
	rootCA     string
	namespaces informer.Lister[u]
	configMaps informer.Lister[u]
	res        *client.Resource[u]
}

func startRootCAPublisher(t *term) error {
	nsInf, err := t.namespaceInformer()
	if err != nil {
		return err
	}
	cmInf, err := t.informer(gvrConfigMaps, "metadata.name="+rootCAConfigMap)
	if err != nil {
		return err
	}
	p := &rootCAPublisher{rootCA: string(t.host.cfg.RootCA), namespaces: nsInf.Lister(), configMaps: cmInf.Lister(), res: t.resource(gvrConfigMaps)}
	var nsReg, cmReg *informer.Registration[u]
	ctl, err := t.controller(RootCAPublisher, p, 2,
		func() bool { return nsReg.HasSynced() }, func() bool { return cmReg.HasSynced() })
	if err != nil {
		return err
	}
	if nsReg, err = nsInf.AddEventHandler(namespaceEvents(ctl), informer.HandlerOptions{}); err != nil {
		return err
	}
	cmReg, err = cmInf.AddEventHandler(informer.HandlerFuncs[u]{
		UpdateFunc: func(_, cm u) { ctl.Enqueue(cm.GetNamespace()) },
		DeleteFunc: func(cm u, _ bool) { ctl.Enqueue(cm.GetNamespace()) },
	}, informer.HandlerOptions{})
	return err
}

// Reconcile makes or restores kube-root-ca.crt in namespace key.
func (p *rootCAPublisher) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	if !active(p.namespaces, key) {
		return controller.Result{}, nil
	}
	want := map[string]any{"ca.crt": p.rootCA}
	cm, ok := p.configMaps.Get(key, rootCAConfigMap)
	if !ok {
		cm = &object.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": want}}
		cm.SetName(rootCAConfigMap)
		cm.SetAnnotations(map[string]string{descriptionAnnotation: rootCADescription})
		_, err := p.res.Namespace(key).Create(ctx, cm)
		if client.IsAlreadyExists(err) || createRefusedByNamespace(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, err
	}
	data, _ := nested[map[string]any](cm, "data")
	if maps.Equal(data, want) && cm.GetAnnotations()[descriptionAnnotation] != "" {
		return controller.Result{}, nil
	}
	cm = cm.DeepCopy()
	cm.SetNested(want, "data")
	ann := cm.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[descriptionAnnotation] = rootCADescription
	cm.SetAnnotations(ann)
	_, err := p.res.Namespace(key).Update(ctx, cm)
	if client.IsNotFound(err) || client.IsConflict(err) {
		// Deleted or changed meanwhile: the informer's event brings the key back.
		return controller.Result{}, nil
	}
	return controller.Result{}, err
}
