package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestNoopWritesKubectl: kubectl patch and label that change nothing are
// not written; kubectl says "(no change)" for the patch and the
// resourceVersion stays.
func TestNoopWritesKubectl(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	kubectl(t, s, "", "create", "configmap", "n", "--from-literal=k=v")
	kubectl(t, s, "", "label", "configmap", "n", "app=x")
	rv := kubectl(t, s, "", "get", "configmap", "n", "-o", "jsonpath={.metadata.resourceVersion}")

	if out := kubectl(t, s, "", "patch", "configmap", "n", "--type=merge", "-p", `{"data":{"k":"v"}}`); strings.TrimSpace(out) != "configmap/n patched (no change)" {
		t.Fatalf("kubectl patch with the same value: %q", out)
	}
	if out := kubectl(t, s, "", "patch", "configmap", "n", "-p", `{"metadata":{"labels":{"app":"x"}}}`); strings.TrimSpace(out) != "configmap/n patched (no change)" {
		t.Fatalf("kubectl strategic patch with the same label: %q", out)
	}
	kubectl(t, s, "", "label", "configmap", "n", "app=x", "--overwrite")
	if got := kubectl(t, s, "", "get", "configmap", "n", "-o", "jsonpath={.metadata.resourceVersion}"); got != rv {
		t.Fatalf("resourceVersion %s after no-op writes, want %s", got, rv)
	}
	if out := kubectl(t, s, "", "patch", "configmap", "n", "--type=merge", "-p", `{"data":{"k":"w"}}`); strings.TrimSpace(out) != "configmap/n patched" {
		t.Fatalf("kubectl patch with a new value: %q", out)
	}
}

// TestNoopWritesClientGo: an Update or Patch that changes nothing answers
// the stored object with its resourceVersion and makes no watch event;
// the first event the watch delivers afterwards is the next real change.
func TestNoopWritesClientGo(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	cms := cs.CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "1"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	for i := range 5 { // a reconciler that always calls Update
		u, err := cms.Update(ctx, created.DeepCopy(), metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u.ResourceVersion != created.ResourceVersion {
			t.Fatalf("no-op update %d: resourceVersion %s, want %s", i, u.ResourceVersion, created.ResourceVersion)
		}
	}
	p, err := cms.Patch(ctx, "n", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"1"}}}`), metav1.PatchOptions{})
	if err != nil || p.ResourceVersion != created.ResourceVersion {
		t.Fatalf("no-op patch: %v %s", err, p.ResourceVersion)
	}
	changed, err := cms.Patch(ctx, "n", types.MergePatchType, []byte(`{"data":{"k":"v2"}}`), metav1.PatchOptions{})
	if err != nil || changed.ResourceVersion == created.ResourceVersion {
		t.Fatalf("real patch: %v %+v", err, changed)
	}
	ev := nextWatchEvent(t, w)
	if got, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Modified || !ok || got.ResourceVersion != changed.ResourceVersion {
		t.Fatalf("first event after the no-ops: %s %+v, want the real patch at %s", ev.Type, ev.Object, changed.ResourceVersion)
	}
}
