package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/protomemo"
	"github.com/listwatch/listwatch/server/bench"
	"github.com/listwatch/listwatch/wire"
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
	// gzip, which recordedListServer, a server elsewhere, answers in.
	c := newTestClient(t, srv, func(cfg *client.Config) { cfg.Compression = client.CompressionGzip })
	want := map[string]*corev1.Pod{}
	for _, p := range productionPodList(syncPods, "").Items {
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

// podListServer answers every LIST with n production pods in protobuf,
// and every WATCH with a stream on which nothing happens.
func podListServer(t testing.TB, n int) http.Handler {
	body := kubeEncode(t, productionPodList(n, "100"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if quietWatch(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		_, _ = w.Write(body)
	})
}

// TestInformerMemoOffForListerWatchersOfTheirOwn: a ListerWatcher of the
// user's own may edit the pods it lists before handing them over (as a
// Transform may): its informer decodes each pod on its own, so an edit
// never reaches another pod (with the memo, pods share their labels).
func TestInformerMemoOffForListerWatchersOfTheirOwn(t *testing.T) {
	const n = 30
	srv := startTLS(t, podListServer(t, n))
	c := newTestClient(t, srv, nil)
	res := client.NewResource[*corev1.Pod](c, pods).Namespace("bench")
	lw := informer.ListWatchFuncs[*corev1.Pod]{
		ListFunc:  res.List,
		WatchFunc: res.Watch,
		ListChunksFunc: func(ctx context.Context, o wire.ListOptions, chunk int, each func([]*corev1.Pod) error) (wire.ListMeta, error) {
			return res.ListChunks(ctx, o, chunk, func(ps []*corev1.Pod) error {
				for _, p := range ps {
					p.Labels["lw-seen"] = p.Name // this pod's own copy, one would think
				}
				return each(ps)
			})
		},
	}
	inf, err := informer.New[*corev1.Pod](lw, informer.Options[*corev1.Pod]{Reflector: informer.ReflectorOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	var added atomic.Int64
	synced := make(chan struct{})
	_, _ = inf.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
		if added.Add(1) == n {
			close(synced)
		}
	}}, informer.HandlerOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = inf.Run(ctx); close(done) }()
	<-synced
	bad := 0
	for _, p := range inf.Lister().List() {
		if p.Labels["lw-seen"] != p.Name {
			bad++
			if bad < 4 {
				t.Errorf("pod %s has lw-seen=%q", p.Name, p.Labels["lw-seen"])
			}
		}
	}
	cancel()
	<-done
	if bad > 0 {
		t.Errorf("%d of %d pods carry another pod's edit", bad, n)
	}
}

// labelRec appends an ObjectMeta labels record.
func labelRec(b []byte, k, v string) []byte {
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.BytesType)
	e = protowire.AppendString(e, k)
	e = protowire.AppendTag(e, 2, protowire.BytesType)
	e = protowire.AppendString(e, v)
	b = protowire.AppendTag(b, 11, protowire.BytesType) // ObjectMeta.labels
	return protowire.AppendBytes(b, e)
}

// podWithMeta is a Pod of the metadata bytes meta.
func podWithMeta(meta []byte) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, meta)
}

// TestMemoDecodeFieldSplitAfterManyRecords: a field whose records come
// in two runs (255 labels, the name, one more label) is decoded whole,
// not memoized from its first run: the pod with the extra label and the
// one without each get what Unmarshal gives (the memo once counted
// records in a byte, which saturated at 255).
func TestMemoDecodeFieldSplitAfterManyRecords(t *testing.T) {
	var labels []byte
	for i := range 255 {
		labels = labelRec(labels, fmt.Sprintf("k%03d", i), "v")
	}
	metaA := append([]byte(nil), labels...)
	metaA = protowire.AppendTag(metaA, 1, protowire.BytesType)
	metaA = protowire.AppendString(metaA, "a")
	metaA = labelRec(metaA, "zz-extra", "only-in-a")
	metaB := append([]byte(nil), labels...)
	metaB = protowire.AppendTag(metaB, 1, protowire.BytesType)
	metaB = protowire.AppendString(metaB, "b")

	m := protomemo.New()
	for _, tc := range []struct {
		name string
		b    []byte
	}{{"A", podWithMeta(metaA)}, {"B", podWithMeta(metaB)}} {
		var want, got corev1.Pod
		if err := want.Unmarshal(tc.b); err != nil {
			t.Fatal(err)
		}
		if err := m.Decode(&got, tc.b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&want, &got) {
			t.Errorf("pod %s: memo gives %d labels (zz-extra=%q), Unmarshal %d", tc.name, len(got.Labels), got.Labels["zz-extra"], len(want.Labels))
		}
	}
}
