package garbagecollector

import (
	"context"
	"errors"
	"time"

	"github.com/listwatch/listwatch/client"
)

// Bounds of the quick retries after a failed discovery, or one that does
// not show an established CRD's resource yet.
const (
	discoveryRetryMin = 100 * time.Millisecond
	discoveryRetryMax = 5 * time.Second
)

// runDiscovery reads discovery, monitors what it finds, and reads it again
// every DiscoveryPeriod, when a CRD changes, and soon after a read that
// failed or missed an established CRD's resource.
func (c *Controller) runDiscovery(ctx context.Context) error {
	retry := discoveryRetryMin
	for {
		next := c.cfg.DiscoveryPeriod
		if !c.syncDiscovery(ctx) {
			next = retry
			retry = min(2*retry, discoveryRetryMax)
		} else {
			retry = discoveryRetryMin
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-c.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// syncDiscovery reads discovery once, resets the REST mapper and syncs the
// monitors. It reports whether the read was complete and current.
func (c *Controller) syncDiscovery(ctx context.Context) bool {
	lists, err := c.client.ServerResources(ctx)
	partial := errors.Is(err, client.ErrPartialDiscovery)
	if err != nil && !partial {
		if ctx.Err() == nil {
			c.log.Info("failed to discover resources", "err", err)
			c.metrics.syncErrors.Inc()
		}
		return false
	}
	d := readDiscovery(lists)
	if len(d.deletable) == 0 {
		c.log.Info("no resources reported by discovery, skipping garbage collector sync")
		c.metrics.syncErrors.Inc()
		return false
	}
	if partial {
		c.log.Info("failed to discover some groups", "err", err)
		c.metrics.syncErrors.Inc()
	}
	c.mapper.reset(d.exact, d.preferred)
	added, removed := c.syncMonitors(d, partial)
	if added != 0 || removed != 0 {
		c.log.Info("synced resource monitors", "added", added, "removed", removed)
	}
	c.discovered.Store(true)
	return !partial && c.crdsDiscovered(d)
}

// crdsDiscovered reports whether discovery agrees with the CRD monitor:
// every established CRD's resource is in d, and no resource a CRD served
// before is in d without one. The server changes discovery a moment after
// a CRD's status; a disagreement is read again soon.
func (c *Controller) crdsDiscovered(d discovered) bool {
	l := c.crdLister()
	if l == nil {
		return true
	}
	current := map[[2]string]bool{}
	for _, crd := range l.List() {
		if g, p, ok := crdServes(crd); ok {
			current[[2]string{g, p}] = true
			c.crdBacked[[2]string{g, p}] = true
		}
	}
	served := map[[2]string]bool{}
	for gvr := range d.deletable {
		gr := [2]string{gvr.Group, gvr.Resource}
		served[gr] = true
		if c.crdBacked[gr] && !current[gr] {
			c.log.Debug("resource of a deleted CRD still in discovery", "group", gvr.Group, "resource", gvr.Resource)
			return false
		}
	}
	for gr := range current {
		if !served[gr] {
			c.log.Debug("established CRD not in discovery yet", "group", gr[0], "resource", gr[1])
			return false
		}
	}
	return true
}
