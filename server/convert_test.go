package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/pager"
	"k8s.io/utils/ptr"
)

// clientsets are client-go's typed clients over JSON and over protobuf.
func (e *env) clientsets(t *testing.T) map[string]*kubernetes.Clientset {
	t.Helper()
	out := map[string]*kubernetes.Clientset{}
	for name, ct := range map[string]string{"json": "application/json", "protobuf": "application/vnd.kubernetes.protobuf"} {
		cfg := e.restConfig()
		cfg.ContentType = ct
		cfg.AcceptContentTypes = ct
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = cs
	}
	return out
}

// nextEvent is the next watch event, or a failure after a deadline (the
// test's own bound, not a synchronisation).
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

// TestHPAVersions: an HPA written as autoscaling/v2 is read as
// autoscaling/v1 (get, list, paged list, watch; JSON and protobuf) and an
// HPA written as v1 as v2, one object in kube's v2 storage, as kube.
func TestHPAVersions(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	css := e.clientsets(t)
	for _, name := range []string{"json", "protobuf"} {
		cs := css[name]
		t.Run(name, func(t *testing.T) {
			ns := "default"
			v1c, v2c := cs.AutoscalingV1().HorizontalPodAutoscalers(ns), cs.AutoscalingV2().HorizontalPodAutoscalers(ns)
			v2name, v1name := "h2-"+name, "h1-"+name
			w, err := v1c.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + v2name})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			created, err := v2c.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: v2name},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d"},
					MinReplicas:    ptr.To[int32](2), MaxReplicas: 5,
					Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
						Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}}},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := v1c.Get(ctx, v2name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.TargetCPUUtilizationPercentage == nil || *got.Spec.TargetCPUUtilizationPercentage != 60 ||
				got.Spec.MaxReplicas != 5 || got.ResourceVersion != created.ResourceVersion || got.APIVersion != "" && got.APIVersion != "autoscaling/v1" {
				t.Fatalf("v1 view of a v2 HPA: %+v", got)
			}
			ev := nextEvent(t, w)
			if h, ok := ev.Object.(*autoscalingv1.HorizontalPodAutoscaler); ev.Type != watch.Added || !ok || h.Name != v2name ||
				h.Spec.TargetCPUUtilizationPercentage == nil || *h.Spec.TargetCPUUtilizationPercentage != 60 {
				t.Fatalf("v1 watch event: %s %+v", ev.Type, ev.Object)
			}
			// Written as v1, read as v2.
			if _, err := v1c.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: v1name},
				Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
					ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d"},
					MaxReplicas:    3, TargetCPUUtilizationPercentage: ptr.To[int32](70),
				},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			g2, err := v2c.Get(ctx, v1name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(g2.Spec.Metrics) != 1 || g2.Spec.Metrics[0].Resource == nil || *g2.Spec.Metrics[0].Resource.Target.AverageUtilization != 70 {
				t.Fatalf("v2 view of a v1 HPA: %+v", g2.Spec)
			}
			// An update through v1 keeps what only v2 says (kube keeps it in
			// an annotation of the v1 form).
			got.Spec.MaxReplicas = 9
			if _, err := v1c.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			g2, err = v2c.Get(ctx, v2name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if g2.Spec.MaxReplicas != 9 || len(g2.Spec.Metrics) != 1 || *g2.Spec.MinReplicas != 2 {
				t.Fatalf("v2 after a v1 update: %+v", g2.Spec)
			}
			// A v1 status write.
			got, _ = v1c.Get(ctx, v2name, metav1.GetOptions{})
			got.Status.CurrentReplicas = 4
			got.Status.CurrentCPUUtilizationPercentage = ptr.To[int32](33)
			if _, err := v1c.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			g2, _ = v2c.Get(ctx, v2name, metav1.GetOptions{})
			if g2.Status.CurrentReplicas != 4 || g2.Spec.MaxReplicas != 9 {
				t.Fatalf("v2 after a v1 status update: %+v", g2)
			}
			// Lists, whole and paged, in v1.
			l, err := v1c.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, h := range l.Items {
				if h.Name == v2name && (h.Spec.TargetCPUUtilizationPercentage == nil || *h.Spec.TargetCPUUtilizationPercentage != 60) {
					t.Fatalf("v1 list item: %+v", h)
				}
				n++
			}
			paged := 0
			p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return v1c.List(ctx, o)
			})
			p.PageSize = 1
			if err := p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
				if _, ok := o.(*autoscalingv1.HorizontalPodAutoscaler); !ok {
					t.Fatalf("paged item %T", o)
				}
				paged++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if paged != n || n < 2 {
				t.Fatalf("paged %d, listed %d", paged, n)
			}
		})
	}
	// One object each, stored as autoscaling/v2 at kube's key.
	kv, err := e.store.Get(ctx, "/registry/horizontalpodautoscalers/default/h1-json")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := decodeDoc(kv.Value); err != nil || d.apiVersion != "autoscaling/v2" {
		t.Fatalf("stored: %s", kv.Value)
	}
}

// TestEventsVersions: events.k8s.io/v1 and core v1 Events are one
// object, stored as a core v1 Event; each version reads and selects it
// by its own field names, as kube.
func TestEventsVersions(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	css := e.clientsets(t)
	for _, name := range []string{"json", "protobuf"} {
		cs := css[name]
		t.Run(name, func(t *testing.T) {
			ev1, core := cs.EventsV1().Events("default"), cs.CoreV1().Events("default")
			w, err := ev1.Watch(ctx, metav1.ListOptions{FieldSelector: "regarding.name=pod-" + name})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			now := metav1.NowMicro()
			created, err := ev1.Create(ctx, &eventsv1.Event{
				ObjectMeta:          metav1.ObjectMeta{Name: "e-" + name},
				EventTime:           now,
				ReportingController: "example.com/ctrl", ReportingInstance: "i",
				Action: "Act", Reason: "Why", Type: "Normal", Note: "hello",
				Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod-" + name},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if created.Note != "hello" || created.Regarding.Name != "pod-"+name {
				t.Fatalf("created: %+v", created)
			}
			c, err := core.Get(ctx, "e-"+name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Message != "hello" || c.InvolvedObject.Name != "pod-"+name || c.ReportingController != "example.com/ctrl" {
				t.Fatalf("core view: %+v", c)
			}
			got := nextEvent(t, w)
			if o, ok := got.Object.(*eventsv1.Event); !ok || got.Type != watch.Added || o.Note != "hello" {
				t.Fatalf("events.k8s.io watch: %s %+v", got.Type, got.Object)
			}
			// Patched through core, seen through events.k8s.io.
			if _, err := core.Patch(ctx, "e-"+name, types.MergePatchType, []byte(`{"message":"bye"}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			got = nextEvent(t, w)
			if o, ok := got.Object.(*eventsv1.Event); !ok || got.Type != watch.Modified || o.Note != "bye" {
				t.Fatalf("events.k8s.io watch after core patch: %s %+v", got.Type, got.Object)
			}
			// Field selectors: each version's names.
			for sel, want := range map[string]int{
				"regarding.name=pod-" + name: 1, "reportingController=example.com/ctrl": 1, "regarding.name=other": 0,
			} {
				l, err := ev1.List(ctx, metav1.ListOptions{FieldSelector: sel})
				if err != nil {
					t.Fatalf("%s: %v", sel, err)
				}
				if len(l.Items) != want {
					t.Errorf("events.k8s.io %s: %d items, want %d", sel, len(l.Items), want)
				}
			}
			if _, err := ev1.List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=x"}); err == nil {
				t.Errorf("events.k8s.io accepted core's field involvedObject.name")
			}
			if l, err := core.List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pod-" + name}); err != nil || len(l.Items) != 1 {
				t.Errorf("core involvedObject.name: %v %v", l, err)
			}
			if err := ev1.Delete(ctx, "e-"+name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := core.Get(ctx, "e-"+name, metav1.GetOptions{}); err == nil {
				t.Fatal("deleted through events.k8s.io, still in core")
			}
		})
	}
}

// TestEventsRecorder: client-go's events.k8s.io recorder (the one
// controller-runtime uses) records through serve, and the event reads
// back through core v1.
func TestEventsRecorder(t *testing.T) {
	e := newEnv(t)
	cs := e.clientsets(t)["protobuf"]
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	b.StartRecordingToSink(ctx.Done())
	defer b.Shutdown()
	rec := b.NewRecorder(scheme.Scheme, "example-controller")
	w, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=target"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	target := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: "default", UID: "u1"}}
	rec.Eventf(target, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced %d", 1)
	ev := nextEvent(t, w)
	c, ok := ev.Object.(*corev1.Event)
	if !ok || c.Reason != "Synced" || c.Message != "synced 1" || c.ReportingController != "example-controller" || c.Action != "Sync" {
		t.Fatalf("recorded: %+v", ev.Object)
	}
}

// FuzzConvertValue: converting any value to a served version either
// fails or yields JSON, never panics, for both converted resources.
func FuzzConvertValue(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h"},"spec":{"maxReplicas":3,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p"},"message":"m"}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod"}`))
	f.Add([]byte(`not json`))
	kinds := []*typedKind{typedKinds["autoscaling/v1/horizontalpodautoscalers"], typedKinds["events.k8s.io/v1/events"]}
	f.Fuzz(func(t *testing.T, value []byte) {
		for _, k := range kinds {
			out, err := k.convertValue(value)
			if err == nil && !json.Valid(out) {
				t.Fatalf("%s: invalid JSON %q", k.external, out)
			}
		}
	})
}
