package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestWebhookRemovesResourceVersionRetry: an update whose
// resourceVersion mutating admission removes is unconditional, so when
// another write lands between the read it was admitted against and its
// own write, it is tried again on the new state (as kube's
// GuaranteedUpdate retries an update that names no resourceVersion)
// instead of failing with the client's 409; one that keeps its
// resourceVersion fails with it. The webhook makes the writes in between:
// on its first calls for an object it updates the object itself. serve
// tries an update first from the watch cache's copy, and again from
// storage after a conflict: two writes in between make the attempt read
// from storage conflict too, which is retried only when the written
// object names no resourceVersion.
func TestWebhookRemovesResourceVersionRetry(t *testing.T) {
	t.Parallel()
	writesBetween := map[string]int32{"drop": 2, "keep": 1}
	s := startServer(t, t.TempDir())
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := context.Background()
	h := newHookServer(t)
	var between atomic.Int32 // writes the webhook made in between
	var calls sync.Map       // name → *atomic.Int32: real updates admitted
	h.custom = func(path string, req admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) bool {
		var obj corev1.ConfigMap
		if req.Operation != admissionv1.Update || json.Unmarshal(req.Object.Raw, &obj) != nil || obj.Data["step"] == "between" {
			return false
		}
		n, _ := calls.LoadOrStore(req.Name, new(atomic.Int32))
		if (req.DryRun == nil || !*req.DryRun) && n.(*atomic.Int32).Add(1) <= writesBetween[req.Name] {
			k := between.Add(1)
			cur, err := cs.CoreV1().ConfigMaps(req.Namespace).Get(context.Background(), req.Name, metav1.GetOptions{})
			if err == nil {
				cur.Data = map[string]string{"step": "between", "write": strconv.Itoa(int(k))}
				_, err = cs.CoreV1().ConfigMaps(req.Namespace).Update(context.Background(), cur, metav1.UpdateOptions{})
			}
			if err != nil {
				resp.Allowed = false
				resp.Result = &metav1.Status{Code: 500, Message: "write in between: " + err.Error()}
				return true
			}
		}
		ops := []map[string]any{{"op": "add", "path": "/data/between-done", "value": "yes"}}
		if path == "/drop-rv" {
			ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/resourceVersion"})
		}
		resp.Patch, _ = json.Marshal(ops)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
		return true
	}
	none := admregv1.SideEffectClassNone
	fail := admregv1.Fail
	hook := func(name, path string) admregv1.MutatingWebhook {
		return admregv1.MutatingWebhook{
			Name: name, ClientConfig: admregv1.WebhookClientConfig{URL: h.url(path), CABundle: h.ca},
			Rules: cmRule(admregv1.Update), SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, FailurePolicy: &fail,
			ObjectSelector: labelSel("hook", name),
		}
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "race"},
		Webhooks:   []admregv1.MutatingWebhook{hook("drop.example.com", "/drop-rv"), hook("keep.example.com", "/keep-rv")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps("default")
	create := func(name, hookName string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"hook": hookName}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	// The configuration reaches the server's informers asynchronously:
	// wait until a dry-run update is mutated.
	probe := create("probe", "drop.example.com")
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p := probe.DeepCopy()
		p.Data = map[string]string{"step": "probe"}
		got, err := cms.Update(ctx, p, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && got.Data["between-done"] == "yes", nil
	})
	if err != nil {
		t.Fatalf("the webhook configuration never took effect: %v", err)
	}

	drop := create("drop", "drop.example.com")
	drop.Data = map[string]string{"step": "outer"}
	got, err := cms.Update(ctx, drop, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update whose resourceVersion admission removes, with a write in between: %v", err)
	}
	if got.Data["step"] != "outer" || got.Data["between-done"] != "yes" {
		t.Fatalf("stored data %v, want the update's, mutated", got.Data)
	}
	if n := between.Load(); n != 2 {
		t.Fatalf("%d writes in between, want 2", n)
	}
	// Admitted three times (the cache's copy, storage's, storage's after
	// the second write in between), the last against that write.
	var outer []admissionv1.AdmissionRequest
	for _, r := range h.requests("/drop-rv") {
		var o corev1.ConfigMap
		if r.Name == "drop" && json.Unmarshal(r.Object.Raw, &o) == nil && o.Data["step"] == "outer" {
			outer = append(outer, r)
		}
	}
	if len(outer) != 3 {
		t.Fatalf("the webhook saw %d attempts of the update, want 3", len(outer))
	}
	var old corev1.ConfigMap
	if err := json.Unmarshal(outer[2].OldObject.Raw, &old); err != nil || old.Data["step"] != "between" {
		t.Fatalf("the last attempt was admitted against %v (%v), want the write in between", old.Data, err)
	}

	keep := create("keep", "keep.example.com")
	keep.Data = map[string]string{"step": "outer"}
	_, err = cms.Update(ctx, keep, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("update that keeps its resourceVersion, with a write in between: %v, want a 409 Conflict", err)
	}
	if n := between.Load(); n != 3 {
		t.Fatalf("%d writes in between, want 3", n)
	}
}
