package garbagecollector

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
)

// eventBuffer bounds the warnings waiting to be written; more are dropped
// (and logged), as kube's event broadcaster drops when its queue is full.
const eventBuffer = 100

var eventsGVR = client.GroupVersionResource{Version: "v1", Resource: "events"}

// warning is one core/v1 Event to write about an object.
type warning struct {
	about           objectReference
	reason, message string
	at              time.Time
}

// reportInvalidNamespaceOwnerRefLocked records that n names, by uid, an
// owner that exists in another namespace: kube's OwnerRefInvalidNamespace
// warning. The reference is then verified as any other and, not existing
// in n's namespace, dangles.
func (c *Controller) reportInvalidNamespaceOwnerRefLocked(n *node, ownerUID string) {
	for _, o := range n.owners {
		if o.UID != ownerUID {
			continue
		}
		invalid := objectReference{ownerReference: o.coordinates(), Namespace: n.identity.Namespace}
		msg := fmt.Sprintf("ownerRef %s does not exist in namespace %q", invalid, n.identity.Namespace)
		c.log.Warn("item references an owner but does not match namespaces", "item", n.identity, "owner", invalid)
		select {
		case c.warnings <- warning{about: n.identity, reason: "OwnerRefInvalidNamespace", message: msg, at: time.Now()}:
		default:
			c.log.Warn("dropping event: too many pending", "reason", "OwnerRefInvalidNamespace", "item", n.identity)
		}
		return
	}
}

// runEvents writes the warnings as Events in the object's namespace (the
// default namespace for a cluster-scoped object, as kube's recorder does).
func (c *Controller) runEvents(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case w := <-c.warnings:
			if err := c.writeEvent(ctx, w); err != nil && ctx.Err() == nil {
				c.log.Info("cannot write event", "reason", w.reason, "item", w.about, "err", err)
			}
		}
	}
}

func (c *Controller) writeEvent(ctx context.Context, w warning) error {
	ns := w.about.Namespace
	if ns == "" {
		ns = "default"
	}
	ts := w.at.UTC().Format(time.RFC3339)
	ev := &object.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Event",
		"metadata": map[string]any{
			"name":      w.about.Name + "." + strconv.FormatInt(w.at.UnixNano(), 16),
			"namespace": ns,
		},
		"involvedObject": map[string]any{
			"apiVersion": w.about.APIVersion,
			"kind":       w.about.Kind,
			"namespace":  w.about.Namespace,
			"name":       w.about.Name,
			"uid":        w.about.UID,
		},
		"reason":             w.reason,
		"message":            w.message,
		"type":               "Warning",
		"source":             map[string]any{"component": "garbage-collector-controller"},
		"firstTimestamp":     ts,
		"lastTimestamp":      ts,
		"count":              1,
		"reportingComponent": "garbage-collector-controller",
	}}
	_, err := client.NewResource[*object.Unstructured](c.client, eventsGVR).Namespace(ns).Create(ctx, ev)
	return err
}
