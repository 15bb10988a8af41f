package client_test

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"sync/atomic"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/protomemo"
	"github.com/listwatch/listwatch/server/bench"
)

// memoMessage is a k8s.io/api object type: its generated protobuf pair.
type memoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// memoSamples are objects of several k8s.io/api kinds, in their protobuf
// bytes, with a new zero value of each one's type: production pods (ten
// to a ReplicaSet, so their parts repeat), and a Deployment, a Node, a
// Service and a ConfigMap, each twice.
func memoSamples(t testing.TB, pods int) (objs [][]byte, zero []func() memoMessage) {
	add := func(m memoMessage, newZero func() memoMessage) {
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		objs, zero = append(objs, b), append(zero, newZero)
	}
	for i := range pods {
		add(bench.ProductionPod("ns", i), func() memoMessage { return &corev1.Pod{} })
	}
	labels := map[string]string{"app": "web", "tier": "front"}
	replicas := int32(3)
	for range 2 {
		add(&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: labels, Annotations: map[string]string{"a": "b"}},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: bench.ProductionPod("ns", 0).Spec}, Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}},
			Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}},
		}, func() memoMessage { return &appsv1.Deployment{} })
		add(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}, PodCIDRs: []string{"10.0.0.0/24"}},
			Status: corev1.NodeStatus{
				Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
				Images:     []corev1.ContainerImage{{Names: []string{"a", "b"}, SizeBytes: 10}},
			},
		}, func() memoMessage { return &corev1.Node{} })
		add(&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{Kind: "X", Name: "x", UID: "u"}}},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}},
				ClusterIPs: []string{"10.1.0.1"}},
		}, func() memoMessage { return &corev1.Service{} })
		add(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Labels: labels},
			Data:       map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {1, 2}},
		}, func() memoMessage { return &corev1.ConfigMap{} })
	}
	return objs, zero
}

// TestMemoDecodeSameAsUnmarshal: decoding through a Memo gives exactly
// what the type's own Unmarshal gives, for parts seen before (hits) and
// not (misses), and the parts that repeat are shared.
func TestMemoDecodeSameAsUnmarshal(t *testing.T) {
	objs, zero := memoSamples(t, 300)
	m := protomemo.New()
	var decoded []memoMessage
	for round := range 2 {
		for i, b := range objs {
			want, got := zero[i](), zero[i]()
			if err := want.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if err := m.Decode(got, b); err != nil {
				t.Fatalf("object %d (%T), round %d: %v", i, got, round, err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("object %d (%T), round %d: decoded through the memo:\n%+v\nUnmarshal:\n%+v", i, got, round, got, want)
			}
			if round == 0 {
				decoded = append(decoded, got)
			}
		}
	}
	hits, misses := m.Stats()
	if hits == 0 || misses == 0 {
		t.Fatalf("hits %d, misses %d: the samples should have both", hits, misses)
	}
	// The replicas of a ReplicaSet share their containers, labels and
	// owner references.
	p0, p1 := decoded[0].(*corev1.Pod), decoded[1].(*corev1.Pod)
	if unsafe.SliceData(p0.Spec.Containers) != unsafe.SliceData(p1.Spec.Containers) ||
		reflect.ValueOf(p0.Labels).UnsafePointer() != reflect.ValueOf(p1.Labels).UnsafePointer() ||
		unsafe.SliceData(p0.OwnerReferences) != unsafe.SliceData(p1.OwnerReferences) {
		t.Error("two replicas' containers, labels or owner references are not shared")
	}
	if cap(p1.Spec.Containers) != len(p1.Spec.Containers) {
		t.Error("a shared slice has spare capacity: an append would write into another object's")
	}
	if m.Owner(unsafe.Pointer(unsafe.SliceData(p1.Spec.Containers))) == nil {
		t.Error("the memo does not own the containers it handed out")
	}
	if p0.Spec.NodeName == p1.Spec.NodeName || p0.Name == p1.Name {
		t.Error("the samples' replicas should differ in name and node")
	}
}

// FuzzMemoDecode: for any bytes, a Memo's decode fails exactly when
// Unmarshal does and otherwise gives what Unmarshal gives, the first time
// (the memo may miss) and the second (it hits what the first put in).
func FuzzMemoDecode(f *testing.F) {
	objs, _ := memoSamples(f, 20)
	for _, b := range objs {
		f.Add(b)
	}
	m := protomemo.New()
	for _, b := range objs[:20] {
		if err := m.Decode(&corev1.Pod{}, b); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want corev1.Pod
		wantErr := want.Unmarshal(b)
		for range 2 {
			var got corev1.Pod
			err := m.Decode(&got, b)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("memo: %v; Unmarshal: %v", err, wantErr)
			}
			if err == nil && !reflect.DeepEqual(&want, &got) {
				t.Fatalf("memo:\n%+v\nUnmarshal:\n%+v", &got, &want)
			}
		}
	})
}

// TestInformerMemoStoresWhatUnmarshalGives: a typed informer (which
// decodes its lists through a Memo) stores every pod exactly as
// Unmarshal decodes it, with the repeating parts shared; one with a
// Transform shares nothing before its transform.
func TestInformerMemoStoresWhatUnmarshalGives(t *testing.T) {
	srv := startTLS(t, recordedListServer(t))
	c := newTestClient(t, srv, nil)
	want := map[string]*corev1.Pod{}
	for i := range syncPods {
		p := bench.ProductionPod("bench", i)
		p.ResourceVersion = "1"
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var u corev1.Pod
		if err := u.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		want[u.Name] = &u
	}
	for _, transform := range []bool{false, true} {
		opts := informer.Options[*corev1.Pod]{Reflector: informer.ReflectorOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
		var transformed atomic.Int64
		if transform {
			opts.Transform = func(p *corev1.Pod) (*corev1.Pod, error) {
				// Edits what only this pod may hold.
				p.Spec.Containers[0].Image += "-edited"
				transformed.Add(1)
				return p, nil
			}
		}
		lw := informer.NewListWatchFromClient(client.NewResource[*corev1.Pod](c, pods).Namespace("bench"), "", "")
		inf, err := informer.New(lw, opts)
		if err != nil {
			t.Fatal(err)
		}
		synced := make(chan struct{})
		var n atomic.Int64
		if _, err := inf.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
			_ = p.Spec.Containers[0].Image // read while others are shared and stored
			if n.Add(1) == syncPods {
				close(synced)
			}
		}}, informer.HandlerOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		ended := make(chan struct{})
		go func() { _ = inf.Run(ctx); close(ended) }()
		<-synced
		stored := inf.Lister().List()
		cancel()
		<-ended
		if len(stored) != syncPods {
			t.Fatalf("stored %d pods, want %d", len(stored), syncPods)
		}
		byRS := map[string]*corev1.Pod{}
		for _, p := range stored {
			w := want[p.Name]
			if transform {
				w = w.DeepCopy()
				w.Spec.Containers[0].Image += "-edited"
			}
			if !reflect.DeepEqual(w, p) {
				t.Fatalf("transform %v: pod %s stored:\n%+v\nUnmarshal:\n%+v", transform, p.Name, p, w)
			}
			rs := p.OwnerReferences[0].Name
			if other, ok := byRS[rs]; ok && !transform && unsafe.SliceData(other.Spec.Containers) != unsafe.SliceData(p.Spec.Containers) {
				t.Fatalf("pods %s and %s of one ReplicaSet do not share their containers", other.Name, p.Name)
			}
			byRS[rs] = p
		}
		if transform && transformed.Load() != syncPods {
			t.Fatalf("transformed %d pods, want %d", transformed.Load(), syncPods)
		}
	}
}
