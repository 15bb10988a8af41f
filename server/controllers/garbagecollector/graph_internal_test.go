package garbagecollector

import (
	"slices"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
)

// builder is a Controller whose queues are recorded, for driving the graph
// builder event by event. Nothing runs.
type builder struct {
	*Controller
	deletes, orphans []string
}

func newBuilder(t *testing.T) *builder {
	t.Helper()
	cl, err := client.New(&client.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{Controller: c}
	c.enqueueDelete = func(uid string) { b.deletes = append(b.deletes, uid) }
	c.enqueueOrphan = func(uid string) { b.orphans = append(b.orphans, uid) }
	return b
}

// take returns and clears the recorded keys, sorted.
func (b *builder) take() (deletes, orphans []string) {
	deletes, orphans = b.deletes, b.orphans
	b.deletes, b.orphans = nil, nil
	slices.Sort(deletes)
	slices.Sort(orphans)
	return deletes, orphans
}

func cmMeta(name, uid string, owners ...ownerReference) objectMeta {
	return objectMeta{Namespace: "ns", Name: name, UID: uid, Owners: owners}
}

func owner(name, uid string, block bool) ownerReference {
	return ownerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid, BlockOwnerDeletion: block}
}

func (b *builder) emit(typ eventType, m objectMeta, old *objectMeta) {
	b.processEvent(event{typ: typ, apiVersion: "v1", kind: "ConfigMap", meta: m, old: old})
}

func TestGraphBuilderTransitions(t *testing.T) {
	b := newBuilder(t)
	// A dependent of an owner not seen yet: a virtual owner to verify.
	b.emit(addEvent, cmMeta("dep", "d1", owner("own", "o1", true)), nil)
	if d, _ := b.take(); !slices.Equal(d, []string{"o1"}) {
		t.Fatalf("virtual owner: enqueued %v, want [o1]", d)
	}
	if v, ok := b.graph.view("o1"); !ok || !v.virtual || len(v.dependents) != 1 {
		t.Fatalf("virtual owner node = %+v, %v", v, ok)
	}
	// The owner is observed: no longer virtual, nothing to do.
	own := cmMeta("own", "o1")
	b.emit(addEvent, own, nil)
	if v, _ := b.graph.view("o1"); v.virtual {
		t.Fatal("observed owner still virtual")
	}
	if d, o := b.take(); len(d)+len(o) != 0 {
		t.Fatalf("observing the owner enqueued %v %v", d, o)
	}

	// Foreground deletion starts: the owner and its dependents are queued.
	fg := own
	fg.BeingDeleted, fg.Finalizers = true, []string{finalizerForeground}
	b.emit(updateEvent, fg, &own)
	if d, _ := b.take(); !slices.Equal(d, []string{"d1", "o1"}) {
		t.Fatalf("foreground: enqueued %v, want [d1 o1]", d)
	}
	// An update that changes nothing of interest starts nothing again.
	b.emit(updateEvent, fg, &fg)
	if d, o := b.take(); len(d)+len(o) != 0 {
		t.Fatalf("repeated update enqueued %v %v", d, o)
	}
	// The blocking dependent goes: the waiting owner is checked again.
	b.emit(deleteEvent, cmMeta("dep", "d1", owner("own", "o1", true)), nil)
	if d, _ := b.take(); !slices.Equal(d, []string{"o1"}) {
		t.Fatalf("blocking dependent deleted: enqueued %v, want [o1]", d)
	}
	if _, ok := b.graph.view("d1"); ok {
		t.Fatal("deleted dependent still in the graph")
	}
}

func TestGraphBuilderOrphanAndDelete(t *testing.T) {
	b := newBuilder(t)
	own := cmMeta("own", "o1")
	b.emit(addEvent, own, nil)
	b.emit(addEvent, cmMeta("dep", "d1", owner("own", "o1", false)), nil)
	b.take()

	orphaning := own
	orphaning.BeingDeleted, orphaning.Finalizers = true, []string{finalizerOrphan}
	b.emit(updateEvent, orphaning, &own)
	if d, o := b.take(); len(d) != 0 || !slices.Equal(o, []string{"o1"}) {
		t.Fatalf("orphan: enqueued %v %v, want orphan [o1]", d, o)
	}

	// The owner goes: its dependents are collected, and its identity is
	// remembered as absent.
	b.emit(deleteEvent, own, nil)
	if d, _ := b.take(); !slices.Equal(d, []string{"d1"}) {
		t.Fatalf("owner deleted: enqueued %v, want [d1]", d)
	}
	id := objectReference{ownerReference: owner("own", "o1", false), Namespace: "ns"}
	if !b.absent.has(id) {
		t.Fatal("deleted owner not in the absent-owner cache")
	}
}

func TestGraphBuilderUnblock(t *testing.T) {
	b := newBuilder(t)
	b.emit(addEvent, cmMeta("own", "o1"), nil)
	dep := cmMeta("dep", "d1", owner("own", "o1", true))
	b.emit(addEvent, dep, nil)
	b.take()
	unblocked := cmMeta("dep", "d1", owner("own", "o1", false))
	b.emit(updateEvent, unblocked, &dep)
	if d, _ := b.take(); !slices.Equal(d, []string{"o1"}) {
		t.Fatalf("unblocked: enqueued %v, want [o1]", d)
	}
	if got := b.graph.blockingDependents("o1"); len(got) != 0 {
		t.Fatalf("blocking dependents after unblock: %v", got)
	}
	// Removing the reference detaches the dependent.
	b.emit(updateEvent, cmMeta("dep", "d1"), &unblocked)
	if v, _ := b.graph.view("o1"); len(v.dependents) != 0 {
		t.Fatalf("dependents after the reference went: %v", v.dependents)
	}
}

func TestGraphBuilderInvalidNamespace(t *testing.T) {
	b := newBuilder(t)
	b.emit(addEvent, objectMeta{Namespace: "a", Name: "own", UID: "o1"}, nil)
	b.emit(addEvent, objectMeta{Namespace: "b", Name: "dep", UID: "d1", Owners: []ownerReference{owner("own", "o1", false)}}, nil)
	if d, _ := b.take(); !slices.Equal(d, []string{"d1"}) {
		t.Fatalf("invalid namespace: enqueued %v, want [d1]", d)
	}
	select {
	case w := <-b.warnings:
		if w.reason != "OwnerRefInvalidNamespace" || w.about.Namespace != "b" {
			t.Fatalf("warning = %+v", w)
		}
	default:
		t.Fatal("no OwnerRefInvalidNamespace warning")
	}
}

func TestReferencesDiffs(t *testing.T) {
	a, b, c := owner("a", "1", false), owner("b", "2", true), owner("c", "3", false)
	bUnblocked := b
	bUnblocked.BlockOwnerDeletion = false
	added, removed, changed := referencesDiffs([]ownerReference{a, b}, []ownerReference{bUnblocked, c})
	if !slices.Equal(added, []ownerReference{c}) || !slices.Equal(removed, []ownerReference{a}) ||
		len(changed) != 1 || changed[0] != (ownerRefPair{b, bUnblocked}) {
		t.Fatalf("diffs = %v %v %v", added, removed, changed)
	}
}

func TestAlternateOwnerIdentity(t *testing.T) {
	absent := objectReference{ownerReference: owner("x", "u", false), Namespace: "ns"}
	other := ownerReference{APIVersion: "v1", Kind: "Secret", Name: "x", UID: "u"}
	deps := []*node{
		{identity: objectReference{Namespace: "ns"}, owners: []ownerReference{owner("x", "u", false)}},
		{identity: objectReference{Namespace: "ns"}, owners: []ownerReference{other}},
	}
	got := alternateOwnerIdentityLocked(deps, absent)
	if got == nil || got.Kind != "Secret" || got.Namespace != "ns" {
		t.Fatalf("alternate = %v", got)
	}
	if alternateOwnerIdentityLocked(deps[:1], absent) != nil {
		t.Fatal("an alternate identity where every dependent agrees")
	}
}

func TestReadDiscovery(t *testing.T) {
	d := readDiscovery(discoveryFixture())
	if _, ok := d.deletable[client.GroupVersionResource{Version: "v1", Resource: "configmaps"}]; !ok {
		t.Error("configmaps not deletable")
	}
	for gvr := range d.deletable {
		switch {
		case gvr.Resource == "events":
			t.Errorf("%v monitored", gvr)
		case gvr.Group == "example.com" && gvr.Version != "v2":
			t.Errorf("%v monitored: only the preferred version is", gvr)
		case gvr.Resource == "readonly":
			t.Errorf("%v monitored without delete", gvr)
		}
	}
	m := &restMapper{}
	m.reset(d.exact, d.preferred)
	if mp, err := m.resourceFor("example.com/v1", "Widget"); err != nil || mp.gvr.Version != "v1" || !mp.namespaced {
		t.Errorf("Widget v1 = %+v, %v", mp, err)
	}
	if mp, err := m.resourceFor("example.com/v9", "Widget"); err != nil || mp.gvr.Version != "v2" {
		t.Errorf("Widget v9 = %+v, %v; want the preferred version", mp, err)
	}
	if _, err := m.resourceFor("example.com/v1", "Nothing"); err == nil {
		t.Error("an unknown kind mapped")
	}
}

// FuzzObjectMeta: any object the server could send is read without panic,
// and the informers' Transforms keep what the graph reads.
func FuzzObjectMeta(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"b","uid":"u","deletionTimestamp":"2024-01-01T00:00:00Z","finalizers":["orphan",1],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"ou","blockOwnerDeletion":true},"x"],"managedFields":[{}]}}`))
	f.Add([]byte(`{"metadata":{"ownerReferences":{"a":1},"finalizers":"x"},"spec":{"group":1,"names":[]},"status":{"conditions":[{"type":"Established","status":"True"},7]}}`))
	f.Add([]byte(`{"metadata":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &object.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return
		}
		want := metaOf(u)
		for _, tr := range []func(*object.Unstructured) (*object.Unstructured, error){metadataOnly, crdSummary} {
			out, err := tr(u.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			got := metaOf(out)
			if got.UID != want.UID || got.Name != want.Name || got.BeingDeleted != want.BeingDeleted ||
				!slices.Equal(got.Owners, want.Owners) || !slices.Equal(got.Finalizers, want.Finalizers) {
				t.Fatalf("transform changed the metadata: %+v, want %+v", got, want)
			}
			if _, ok := out.Nested("metadata", "managedFields"); ok {
				t.Fatal("managedFields kept")
			}
		}
		crdServes(u)
	})
}
