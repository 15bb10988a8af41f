package garbagecollector_test

import (
	"slices"
	"testing"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// TestGarbageCollector runs one server and one collector; each subtest works
// in a namespace of its own.
func TestGarbageCollector(t *testing.T) {
	e := newEnv(t, false)

	t.Run("BackgroundConfigMapOwnedByConfigMap", func(t *testing.T) {
		e.namespace(t, "bg")
		owner := e.cm(t, "bg", "owner")
		e.cm(t, "bg", "dep1", ref(owner, false))
		e.cm(t, "bg", "dep2", ref(owner, true))
		e.cm(t, "bg", "bystander")
		e.del(t, cmGVR, "bg", "owner", "") // Background is the default
		e.waitGone(t, cmGVR, "bg", "dep1", "dep2")
		if !e.exists(t, cmGVR, "bg", "bystander") {
			t.Fatal("an object without owners was collected")
		}
	})

	t.Run("CustomResourceOwnedByBuiltin", func(t *testing.T) {
		// The CRD is created while the collector runs: the CRD monitor's
		// event makes it read discovery and monitor widgets.
		e.crd(t, "widgets", "Widget", "Namespaced")
		e.namespace(t, "cr")
		owner := e.cm(t, "cr", "owner")
		e.create(t, widgetGVR, "example.com/v1", "Widget", "cr", "w1", ref(owner, false))
		e.create(t, widgetGVR, "example.com/v1", "Widget", "cr", "w2", ref(owner, false))
		e.del(t, cmGVR, "cr", "owner", "Background")
		e.waitGone(t, widgetGVR, "cr", "w1", "w2")
	})

	t.Run("DanglingUIDMismatch", func(t *testing.T) {
		e.namespace(t, "dangling")
		owner := e.cm(t, "dangling", "owner")
		bogus := ref(owner, false)
		bogus["uid"] = "00000000-0000-0000-0000-000000000001" // the name exists, with another uid
		e.cm(t, "dangling", "dep", bogus)
		missing := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": "00000000-0000-0000-0000-000000000002"}
		e.cm(t, "dangling", "dep-missing", missing)
		e.waitGone(t, cmGVR, "dangling", "dep", "dep-missing")
		if !e.exists(t, cmGVR, "dangling", "owner") {
			t.Fatal("the owner whose name was referenced with another uid was deleted")
		}
	})

	t.Run("PartiallyDangling", func(t *testing.T) {
		e.namespace(t, "partial")
		owner := e.cm(t, "partial", "owner")
		gone := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "00000000-0000-0000-0000-000000000003"}
		e.cm(t, "partial", "dep", gone, ref(owner, false))
		want := []string{owner.GetUID()}
		e.waitFor(t, "dangling reference removed", func() bool {
			return slices.Equal(e.ownerUIDs(t, cmGVR, "partial", "dep"), want)
		})
	})

	t.Run("Orphan", func(t *testing.T) {
		e.namespace(t, "orphan")
		owner := e.cm(t, "orphan", "owner")
		other := e.cm(t, "orphan", "other")
		e.cm(t, "orphan", "dep1", ref(owner, true))
		e.cm(t, "orphan", "dep2", ref(owner, false), ref(other, false))
		e.del(t, cmGVR, "orphan", "owner", "Orphan")
		e.waitGone(t, cmGVR, "orphan", "owner")
		// The finalizer goes only after every reference went.
		if got := e.ownerUIDs(t, cmGVR, "orphan", "dep1"); len(got) != 0 {
			t.Errorf("dep1 owners = %v, want none", got)
		}
		if got := e.ownerUIDs(t, cmGVR, "orphan", "dep2"); !slices.Equal(got, []string{other.GetUID()}) {
			t.Errorf("dep2 owners = %v, want [%s]", got, other.GetUID())
		}
	})

	t.Run("Foreground", func(t *testing.T) {
		e.namespace(t, "fg")
		owner := e.cm(t, "fg", "owner")
		e.cm(t, "fg", "dep1", ref(owner, true))
		e.cm(t, "fg", "dep2", ref(owner, true))
		e.cm(t, "fg", "dep3", ref(owner, false)) // deleted too, not waited for
		d := e.watchDeletions(t, cmGVR, "fg")
		e.del(t, cmGVR, "fg", "owner", "Foreground")
		got := d.next(t, 4)
		i := slices.Index(got, "owner")
		for _, dep := range []string{"dep1", "dep2"} {
			if j := slices.Index(got, dep); j < 0 || j > i {
				t.Errorf("deletion order %v: %s not deleted before the owner", got, dep)
			}
		}
		e.waitGone(t, cmGVR, "fg", "dep3")
	})

	t.Run("ForegroundChain", func(t *testing.T) {
		e.namespace(t, "chain")
		a := e.cm(t, "chain", "a")
		b := e.cm(t, "chain", "b", ref(a, true))
		e.cm(t, "chain", "c", ref(b, true))
		d := e.watchDeletions(t, cmGVR, "chain")
		e.del(t, cmGVR, "chain", "a", "Foreground")
		if got := d.next(t, 3); !slices.Equal(got, []string{"c", "b", "a"}) {
			t.Fatalf("deletion order %v, want [c b a]", got)
		}
	})

	t.Run("ClusterScopedOwnerOfNamespacedDependents", func(t *testing.T) {
		e.crd(t, "gadgets", "Gadget", "Cluster")
		e.namespace(t, "cs1")
		e.namespace(t, "cs2")
		g := e.create(t, gadgetGVR, "example.com/v1", "Gadget", "", "g1")
		e.cm(t, "cs1", "dep", ref(g, false))
		e.cm(t, "cs2", "dep", ref(g, true))
		e.del(t, gadgetGVR, "", "g1", "Background")
		e.waitGone(t, cmGVR, "cs1", "dep")
		e.waitGone(t, cmGVR, "cs2", "dep")
	})

	t.Run("ClusterScopedDependentOfNamespacedOwner", func(t *testing.T) {
		// Invalid: kube reports it (in the default namespace) and leaves
		// the dependent alone, whether or not the owner exists.
		e.crd(t, "gadgets", "Gadget", "Cluster")
		e.namespace(t, "csdep")
		owner := e.cm(t, "csdep", "owner")
		e.create(t, gadgetGVR, "example.com/v1", "Gadget", "", "invalid", ref(owner, false))
		e.waitFor(t, "OwnerRefInvalidNamespace event", func() bool { return e.hasEvent(t, "default", "invalid") })
		e.del(t, cmGVR, "csdep", "owner", "Background")
		// A probe enqueued after it is collected; the invalid one stays.
		missing := map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "name": "nobody", "uid": "00000000-0000-0000-0000-000000000004"}
		e.create(t, gadgetGVR, "example.com/v1", "Gadget", "", "probe", missing)
		e.waitGone(t, gadgetGVR, "", "probe")
		if !e.exists(t, gadgetGVR, "", "invalid") {
			t.Fatal("a cluster-scoped dependent of a namespaced owner was collected")
		}
	})

	t.Run("OwnerInAnotherNamespace", func(t *testing.T) {
		// A namespaced dependent can only be owned from its namespace (or
		// by a cluster-scoped object): the reference dangles, the
		// dependent goes, and a warning Event says why, as in kube.
		e.namespace(t, "xns1")
		e.namespace(t, "xns2")
		owner := e.cm(t, "xns1", "owner")
		e.cm(t, "xns2", "dep", ref(owner, false))
		e.waitGone(t, cmGVR, "xns2", "dep")
		if !e.exists(t, cmGVR, "xns1", "owner") {
			t.Fatal("owner deleted")
		}
		e.waitFor(t, "OwnerRefInvalidNamespace event", func() bool { return e.hasEvent(t, "xns2", "dep") })
	})
}

// metricValue sums the samples of the named metric whose labels include
// every pair in want.
func metricValue(t *testing.T, e *env, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found, sum := false, 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			found = true
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum, found
}

func TestGarbageCollectorMetrics(t *testing.T) {
	e := newEnv(t, false)
	e.namespace(t, "m")
	owner := e.cm(t, "m", "owner")
	e.cm(t, "m", "dep", ref(owner, false))
	e.del(t, cmGVR, "m", "owner", "Background")
	e.waitGone(t, cmGVR, "m", "dep")
	e.waitFor(t, "deletion counted", func() bool {
		v, _ := metricValue(t, e, "garbagecollector_controller_deletions_total", map[string]string{"propagation_policy": "Background"})
		return v >= 1
	})
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"workqueue_adds_total", map[string]string{"name": "garbage_collector_attempt_to_delete"}},
		{"workqueue_adds_total", map[string]string{"name": "garbage_collector_attempt_to_orphan"}},
		{"controller_reconcile_total", map[string]string{"controller": "garbage_collector_attempt_to_delete", "result": "success"}},
		{"reflector_lists_total", map[string]string{"name": "garbagecollector configmaps"}},
		{"garbagecollector_controller_resources_sync_error_total", nil},
		{"garbagecollector_controller_monitored_resources", nil},
		{"garbagecollector_controller_graph_nodes", nil},
	} {
		if _, ok := metricValue(t, e, c.name, c.labels); !ok {
			t.Errorf("no %s%v", c.name, c.labels)
		}
	}
	if v, _ := metricValue(t, e, "garbagecollector_controller_monitored_resources", nil); v < 5 {
		t.Errorf("monitored resources = %v, want the server's deletable resources", v)
	}
}

// hasEvent reports whether ns holds an OwnerRefInvalidNamespace event about
// the object named name.
func (e *env) hasEvent(t *testing.T, ns, name string) bool {
	t.Helper()
	l, err := e.res(eventGVR, ns).List(t.Context(), wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(l.Items, func(ev *object.Unstructured) bool {
		r, _ := ev.Nested("reason")
		n, _ := ev.Nested("involvedObject", "name")
		return r == "OwnerRefInvalidNamespace" && n == name
	})
}

// TestGarbageCollectorFollowsCRDs: a CRD created while the collector runs
// gets a monitor, and loses it when the CRD is deleted.
func TestGarbageCollectorFollowsCRDs(t *testing.T) {
	e := newEnv(t, false)
	monitored := func() float64 {
		v, _ := metricValue(t, e, "garbagecollector_controller_monitored_resources", nil)
		return v
	}
	before := monitored()
	e.crd(t, "things", "Thing", "Namespaced")
	e.waitFor(t, "things monitored", func() bool { return monitored() == before+1 })
	e.waitFor(t, "things listed", func() bool {
		_, ok := metricValue(t, e, "reflector_lists_total", map[string]string{"name": "garbagecollector things.example.com"})
		return ok
	})
	e.del(t, crdGVR, "", "things.example.com", "")
	e.waitFor(t, "things no longer monitored", func() bool { return monitored() == before })
}
