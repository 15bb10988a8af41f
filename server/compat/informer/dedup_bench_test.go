package informer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/wire"
)

// benchHex is a stable fake digest.
func benchHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// benchPodJSON is the i-th production-shaped pod (a Deployment's, ten
// per ReplicaSet, two containers, managedFields of three managers;
// about 6 KiB of JSON), encoded: decoding it gives every pod its own
// strings, as a client's decoder does.
func benchPodJSON(tb testing.TB, i int) []byte {
	rs := i / 10
	app := fmt.Sprintf("app-%04d", rs/3)
	team := fmt.Sprintf("team-%02d", rs%17)
	hash := benchHex(fmt.Sprint("rs-", rs))[:10]
	rsName := app + "-" + hash
	rsUID := benchHex("rs/" + rsName)[:32]
	node := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", (i%100)/250, i%100+1)
	podIP := fmt.Sprintf("10.%d.%d.%d", 100+i/65025%100, i/255%255, i%255+1)
	version := fmt.Sprintf("v1.%d.%d", rs%7, rs%13)
	image := fmt.Sprintf("registry.example.com/%s/%s:%s", team, app, version)
	proxy := "registry.example.com/platform/envoy-proxy:v1.31.2"
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * time.Second))
	yes, grace, exp := true, int64(30), int64(3607)
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	res := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
	}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + app, ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	cond := func(t corev1.PodConditionType, at time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(at))}
	}
	cstatus := func(name, img string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Ready: true, Started: &yes, Image: img, ImageID: img + "@sha256:" + benchHex(img),
			ContainerID: "containerd://" + benchHex(fmt.Sprint(i, name)),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}}
	}
	mf := func(manager, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &created, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: sub}
	}
	kcm := `{"f:metadata":{"f:annotations":{".":{},"f:checksum/config":{},"f:prometheus.io/port":{}},"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"` + rsUID + `\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:args":{},"f:env":{},"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{".":{},"f:httpGet":{".":{},"f:path":{},"f:port":{}}},"f:name":{},"f:ports":{},"f:resources":{".":{},"f:limits":{},"f:requests":{}},"f:volumeMounts":{}},"k:{\"name\":\"proxy\"}":{".":{},"f:args":{},"f:image":{},"f:name":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:serviceAccountName":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{},"f:volumes":{}}}`
	sched := `{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"PodScheduled\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}}}}`
	kubelet := `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"` + podIP + `\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("bench-%07d", i), GenerateName: rsName + "-",
			UID: types.UID(benchHex(fmt.Sprint("pod", i))[:32]), ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: created,
			Labels: map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": team, "app.kubernetes.io/version": version,
				"tier": []string{"frontend", "backend", "worker"}[rs%3], "pod-template-hash": hash},
			Annotations: map[string]string{"checksum/config": benchHex("config/" + rsName), "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: types.UID(rsUID),
				Controller: &yes, BlockOwnerDeletion: &yes}},
			ManagedFields: []metav1.ManagedFieldsEntry{mf("kube-controller-manager", "", kcm), mf("kube-scheduler", "status", sched), mf("kubelet", "status", kubelet)},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: image, Args: []string{"--config=/etc/" + app + "/config.yaml"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{{Name: "APP_NAME", Value: app}, {Name: "TEAM", Value: team}, {Name: "LOG_LEVEL", Value: "info"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
				Resources: res("250m", "512Mi"), VolumeMounts: mounts, LivenessProbe: probe("/healthz", 8080), ReadinessProbe: probe("/readyz", 8080),
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
			}, {
				Name: "proxy", Image: proxy, Args: []string{"--concurrency=2"},
				Ports:     []corev1.ContainerPort{{Name: "proxy-admin", ContainerPort: 15000, Protocol: corev1.ProtocolTCP}},
				Env:       []corev1.EnvVar{{Name: "SERVICE_NAME", Value: app}},
				Resources: res("100m", "128Mi"), VolumeMounts: mounts[2:], ReadinessProbe: probe("/ready", 15000),
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}}}}}},
			},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: app, NodeName: node, SchedulerName: corev1.DefaultSchedulerName, SecurityContext: &corev1.PodSecurityContext{},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.2xlarge", "m6i.4xlarge"}}}}}}}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &grace},
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: team, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{cond(corev1.PodInitialized, time.Second), cond(corev1.PodReady, 9*time.Second), cond(corev1.PodScheduled, 0)},
			HostIP:     "10.0.0.1", PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}}, StartTime: &created, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{cstatus("app", image), cstatus("proxy", proxy)},
		},
	}
	b, err := json.Marshal(pod)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func decodeBenchPods(tb testing.TB, raw [][]byte) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(raw))
	for i, b := range raw {
		pods[i] = &corev1.Pod{}
		if err := json.Unmarshal(b, pods[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return pods
}

func benchPodsRaw(tb testing.TB, n int) [][]byte {
	raw := make([][]byte, n)
	for i := range raw {
		raw[i] = benchPodJSON(tb, i)
	}
	return raw
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// syncPods runs an informer over pods (one LIST, then a watch on which
// nothing happens), with sharing on or off, and returns it once every pod
// has been delivered to a handler, with the function that stops it.
func syncPods(tb testing.TB, pods []*corev1.Pod, dedup bool) (*informer.Informer[*corev1.Pod], func()) {
	lw := informer.ListWatchFuncs[*corev1.Pod]{
		ListFunc: func(context.Context, wire.ListOptions) (*wire.List[*corev1.Pod], error) {
			return &wire.List[*corev1.Pod]{Metadata: wire.ListMeta{ResourceVersion: "1"}, Items: pods}, nil
		},
		WatchFunc: func(ctx context.Context, _ wire.ListOptions) (client.Watcher[*corev1.Pod], error) {
			return idleWatcher{ctx}, nil
		},
	}
	inf, err := informer.New[*corev1.Pod](lw, informer.Options[*corev1.Pod]{DisableDedup: !dedup,
		Reflector: informer.ReflectorOptions{Logger: quiet}})
	if err != nil {
		tb.Fatal(err)
	}
	var got atomic.Int64
	all := make(chan struct{})
	if _, err := inf.AddEventHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
		if got.Add(1) == int64(len(pods)) {
			close(all)
		}
	}}, informer.HandlerOptions{}); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = inf.Run(ctx); close(done) }()
	<-all
	return inf, func() { cancel(); <-done }
}

// BenchmarkDedupPods measures the sharing of production-shaped pods in
// an informer, with dedup on and off: ns/pod and allocs/pod of its sync
// (from Run until the last pod reached a handler; decoding is not timed;
// the difference between the two is what sharing costs), and
// retained-B/pod, the heap held by the pods and the informer after a GC.
func BenchmarkDedupPods(b *testing.B) {
	const n = 2000
	raw := benchPodsRaw(b, n)
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("dedup=%v", on), func(b *testing.B) {
			var retained uint64
			var mallocs uint64
			var timed time.Duration
			iters := 0
			for b.Loop() {
				b.StopTimer()
				before := heapInUse()
				pods := decodeBenchPods(b, raw)
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				b.StartTimer()
				start := time.Now()
				inf, stop := syncPods(b, pods, on)
				timed += time.Since(start)
				b.StopTimer()
				runtime.ReadMemStats(&ms1)
				mallocs += ms1.Mallocs - ms0.Mallocs
				retained += heapInUse() - before
				runtime.KeepAlive(pods)
				runtime.KeepAlive(inf)
				stop()
				iters++
				b.StartTimer()
			}
			b.ReportMetric(float64(timed.Nanoseconds())/float64(iters*n), "ns/pod")
			b.ReportMetric(float64(mallocs)/float64(iters*n), "allocs/pod")
			b.ReportMetric(float64(retained)/float64(iters*n), "retained-B/pod")
		})
	}
}

// TestDedupTypedPodsKeepValues: production-shaped pods in an informer keep
// exactly their values after sharing, and replicas of one ReplicaSet
// share their containers and labels. (That an object's own name and UID
// stay out of the sharing tables is the library's
// TestDedupLeavesObjectIdentityOut.)
func TestDedupTypedPodsKeepValues(t *testing.T) {
	raw := benchPodsRaw(t, 30)
	want := decodeBenchPods(t, raw)
	inf, stop := syncPods(t, decodeBenchPods(t, raw), true)
	defer stop()
	get := func(i int) *corev1.Pod {
		p, ok := inf.Lister().Get(want[i].Namespace, want[i].Name)
		if !ok {
			t.Fatalf("pod %d not in the store", i)
		}
		return p
	}
	for i := range want {
		if !reflect.DeepEqual(get(i), want[i]) {
			t.Fatalf("pod %d changed", i)
		}
	}
	a, b := get(0), get(1)
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] {
		t.Error("replicas' containers not shared")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("replicas' labels not shared")
	}
}
