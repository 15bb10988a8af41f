package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// nextWatchEvent reads w's next event, failing the test after 30 s.
func nextWatchEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event in 30s")
	}
	return watch.Event{}
}

// expectEvent reads w's next event and checks its type; it returns the
// event's object's metadata.
func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType) metav1.Object {
	t.Helper()
	ev := nextWatchEvent(t, w)
	if ev.Type != typ {
		t.Fatalf("event %s %+v, want %s", ev.Type, ev.Object, typ)
	}
	m, ok := ev.Object.(metav1.Object)
	if !ok {
		t.Fatalf("event object %T", ev.Object)
	}
	return m
}

// TestFinalizersClientGo: the life of an object with a finalizer as
// client-go's watch sees it — ADDED, MODIFIED with deletionTimestamp on
// DELETE, DELETED once its last finalizer is removed — for a ConfigMap
// and a custom resource.
func TestFinalizersClientGo(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cfg := restConfig(t, s)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()

	cms := cs.CoreV1().ConfigMaps("default")
	w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=fin"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fin", Finalizers: []string{"example.com/f"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Added)
	if err := cms.Delete(ctx, "fin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m := expectEvent(t, w, watch.Modified)
	if m.GetDeletionTimestamp() == nil || m.GetDeletionGracePeriodSeconds() == nil || *m.GetDeletionGracePeriodSeconds() != 0 {
		t.Fatalf("MODIFIED: %+v", m)
	}
	got, err := cms.Get(ctx, "fin", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("after DELETE: %v %+v", err, got)
	}
	// No new finalizers now.
	_, err = cms.Patch(ctx, "fin", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/f","example.com/g"]}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "no new finalizers can be added if the object is being deleted") {
		t.Fatalf("adding a finalizer while deleting: %v", err)
	}
	got.Finalizers = nil
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Deleted)
	if _, err := cms.Get(ctx, "fin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer: %v", err)
	}

	// A custom resource, through the dynamic client.
	createGadgetCRD(t, s)
	dyn := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"})
	gw, err := dyn.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Stop()
	g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1", "finalizers": []any{"example.com/f"}}}}
	if _, err := dyn.Create(ctx, g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, gw, watch.Added)
	if err := dyn.Delete(ctx, "g1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := expectEvent(t, gw, watch.Modified); m.GetDeletionTimestamp() == nil || m.GetGeneration() != 2 {
		t.Fatalf("custom resource MODIFIED: deletionTimestamp %v generation %d", m.GetDeletionTimestamp(), m.GetGeneration())
	}
	if _, err := dyn.Patch(ctx, "g1", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, gw, watch.Deleted)
}

// createGadgetCRD creates the cluster-scoped gadgets.example.com and waits
// until it is served.
func createGadgetCRD(t *testing.T, s *testServer) {
	t.Helper()
	kubectl(t, s, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"gadgets.example.com"},
		"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"gadgets","singular":"gadget","kind":"Gadget"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`,
		"create", "-f", "-")
	kubectl(t, s, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/gadgets.example.com")
}

// TestDeletionKubectl: what kubectl sees of finalizers, propagation and
// pods' grace periods.
func TestDeletionKubectl(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	kubectl(t, s, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fin","finalizers":["example.com/f"]}}`, "create", "-f", "-")
	if out := kubectl(t, s, "", "delete", "configmap", "fin", "--wait=false"); !strings.Contains(out, `configmap "fin" deleted`) {
		t.Fatalf("delete: %s", out)
	}
	if out := kubectl(t, s, "", "get", "configmap", "fin", "-o", "jsonpath={.metadata.deletionTimestamp}"); out == "" {
		t.Fatal("no deletionTimestamp after delete")
	}
	out, err := kubectlErr(t, s, "", "patch", "configmap", "fin", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/f","example.com/new"]}}`)
	if err == nil || !strings.Contains(out, `no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/new"}`) {
		t.Fatalf("adding a finalizer: %v %s", err, out)
	}
	kubectl(t, s, "", "patch", "configmap", "fin", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	if out, err := kubectlErr(t, s, "", "get", "configmap", "fin"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("after the last finalizer: %v %s", err, out)
	}

	// --cascade=orphan and =foreground leave the GC's finalizer.
	kubectl(t, s, "", "create", "configmap", "orph")
	kubectl(t, s, "", "delete", "configmap", "orph", "--cascade=orphan", "--wait=false")
	if out := kubectl(t, s, "", "get", "configmap", "orph", "-o", "jsonpath={.metadata.finalizers}"); out != `["orphan"]` {
		t.Fatalf("orphan: %s", out)
	}
	kubectl(t, s, "", "create", "configmap", "fg")
	kubectl(t, s, "", "delete", "configmap", "fg", "--cascade=foreground", "--wait=false")
	if out := kubectl(t, s, "", "get", "configmap", "fg", "-o", "jsonpath={.metadata.finalizers}"); out != `["foregroundDeletion"]` {
		t.Fatalf("foreground: %s", out)
	}

	// A pod bound to a node stays for its grace period; --now is 1s, 0
	// with --force deletes it.
	kubectl(t, s, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"i"}]}}`, "create", "-f", "-")
	kubectl(t, s, "", "delete", "pod", "p", "--wait=false")
	if out := kubectl(t, s, "", "get", "pod", "p", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds}"); out != "30" {
		t.Fatalf("grace period: %q", out)
	}
	kubectl(t, s, "", "delete", "pod", "p", "--now", "--wait=false")
	if out := kubectl(t, s, "", "get", "pod", "p", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds}"); out != "1" {
		t.Fatalf("grace period after --now: %q", out)
	}
	kubectl(t, s, "", "delete", "pod", "p", "--grace-period=0", "--force")
	if out, err := kubectlErr(t, s, "", "get", "pod", "p"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("after a forced delete: %v %s", err, out)
	}
	// An unbound pod goes at once.
	kubectl(t, s, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, "create", "-f", "-")
	kubectl(t, s, "", "delete", "pod", "q", "--wait=false")
	if out, err := kubectlErr(t, s, "", "get", "pod", "q"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("unbound pod: %v %s", err, out)
	}
}

// TestDeletionClientGoOptions: grace periods, propagation, preconditions
// and dry run through client-go's DeleteOptions.
func TestDeletionClientGoOptions(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	pods := cs.CoreV1().Pods("default")
	p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{NodeName: "n1", TerminationGracePeriodSeconds: new(int64(45)), Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Preconditions and dry run first: nothing changes.
	wrong := types.UID("wrong")
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}}); !apierrors.IsConflict(err) {
		t.Fatalf("wrong uid: %v", err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if got, err := pods.Get(ctx, "p", metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil || got.ResourceVersion != p.ResourceVersion {
		t.Fatalf("dry run changed the pod: %v %+v", err, got.ObjectMeta)
	}
	before := time.Now().Add(-time.Second)
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion}}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 45 ||
		got.DeletionTimestamp.Time.Before(before.Add(45*time.Second)) {
		t.Fatalf("graceful delete: %v %+v", err, got.ObjectMeta)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after grace 0: %v", err)
	}

	cms := cs.CoreV1().ConfigMaps("default")
	for _, name := range []string{"o", "b"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	orphan, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground
	if err := cms.Delete(ctx, "o", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	if got, err := cms.Get(ctx, "o", metav1.GetOptions{}); err != nil || len(got.Finalizers) != 1 || got.Finalizers[0] != "orphan" {
		t.Fatalf("orphan: %v %+v", err, got.ObjectMeta)
	}
	if err := cms.Delete(ctx, "b", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("background: %v", err)
	}
	yes := true
	err = cms.Delete(ctx, "o", metav1.DeleteOptions{PropagationPolicy: &orphan, OrphanDependents: &yes}) //nolint:staticcheck // the deprecated field is what is tested
	if !apierrors.IsInvalid(err) {
		t.Fatalf("both propagationPolicy and orphanDependents: %v", err)
	}
}
