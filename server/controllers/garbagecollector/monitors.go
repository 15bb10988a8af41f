package garbagecollector

import (
	"context"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
)

// crdResource is watched like any resource; its changes also trigger a
// discovery, so that new custom resources are monitored at once.
var crdResource = client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// monitor lists and watches one resource into the graph.
type monitor struct {
	gvr  client.GroupVersionResource
	info resourceInfo
	inf  *informer.Informer[*object.Unstructured]
	reg  *informer.Registration[*object.Unstructured]
	// stop ends this monitor alone (the resource left discovery).
	stopCtx context.Context
	stop    context.CancelFunc
}

func apiVersionOf(gvr client.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version
	}
	return gvr.Group + "/" + gvr.Version
}

// newMonitor builds the informer of gvr and the handler that feeds the
// graph. It starts nothing.
func (c *Controller) newMonitor(gvr client.GroupVersionResource, info resourceInfo) (*monitor, error) {
	name := gvr.Resource
	if gvr.Group != "" {
		name += "." + gvr.Group
	}
	isCRD := gvr.Group == crdResource.Group && gvr.Resource == crdResource.Resource
	transform := metadataOnly
	if isCRD {
		transform = crdSummary
	}
	inf, err := informer.New[*object.Unstructured](client.NewResource[*object.Unstructured](c.client, gvr), informer.Options[*object.Unstructured]{
		Transform: transform,
		Reflector: informer.ReflectorOptions{
			Name:    "garbagecollector " + name,
			Logger:  c.log,
			Metrics: c.informerMetrics,
		},
	})
	if err != nil {
		return nil, err
	}
	apiVersion, kind := apiVersionOf(gvr), info.kind
	emit := func(typ eventType, old *objectMeta, obj *object.Unstructured) {
		c.processEvent(event{typ: typ, apiVersion: apiVersion, kind: kind, meta: metaOf(obj), old: old})
		if isCRD {
			c.signalDiscovery()
		}
	}
	reg, err := inf.AddEventHandler(informer.HandlerFuncs[*object.Unstructured]{
		AddFunc: func(obj *object.Unstructured, _ bool) { emit(addEvent, nil, obj) },
		UpdateFunc: func(old, obj *object.Unstructured) {
			om := metaOf(old)
			emit(updateEvent, &om, obj)
		},
		DeleteFunc: func(obj *object.Unstructured, _ bool) { emit(deleteEvent, nil, obj) },
	}, informer.HandlerOptions{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &monitor{gvr: gvr, info: info, inf: inf, reg: reg, stopCtx: ctx, stop: cancel}, nil
}

// run runs the informer until ctx ends or the monitor is stopped.
func (m *monitor) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	unhook := context.AfterFunc(m.stopCtx, cancel)
	defer unhook()
	return m.inf.Run(ctx)
}

// syncMonitors starts a monitor for every deletable resource not monitored
// yet and, unless discovery was partial, stops those no longer served.
func (c *Controller) syncMonitors(d discovered, partial bool) (added, removed int) {
	c.monitorsMu.Lock()
	defer c.monitorsMu.Unlock()
	for gvr, info := range d.deletable {
		if m, ok := c.monitors[gvr]; ok && m.info == info {
			continue
		} else if ok {
			m.stop()
			delete(c.monitors, gvr)
		}
		m, err := c.newMonitor(gvr, info)
		if err != nil {
			c.log.Error("cannot monitor resource", "resource", gvr.String(), "err", err)
			c.metrics.syncErrors.Inc()
			continue
		}
		if !c.group.Go("monitor "+gvr.String(), m.run) {
			m.stop()
			continue
		}
		c.monitors[gvr] = m
		added++
	}
	if !partial {
		for gvr, m := range c.monitors {
			if _, ok := d.deletable[gvr]; !ok {
				m.stop()
				delete(c.monitors, gvr)
				removed++
			}
		}
	}
	c.metrics.monitors.Set(float64(len(c.monitors)))
	return added, removed
}

// monitorsSynced reports whether every monitor has listed into the graph.
func (c *Controller) monitorsSynced() bool {
	c.monitorsMu.Lock()
	defer c.monitorsMu.Unlock()
	if len(c.monitors) == 0 {
		return false
	}
	for _, m := range c.monitors {
		if !m.reg.HasSynced() {
			return false
		}
	}
	return true
}

// crdLister returns the lister of the CRD monitor, if there is one.
func (c *Controller) crdLister() informer.Lister[*object.Unstructured] {
	c.monitorsMu.Lock()
	defer c.monitorsMu.Unlock()
	for gvr, m := range c.monitors {
		if gvr.Group == crdResource.Group && gvr.Resource == crdResource.Resource {
			return m.inf.Lister()
		}
	}
	return nil
}
