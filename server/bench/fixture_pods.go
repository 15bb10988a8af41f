package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The fixtures "bench" can build, chosen with --fixture.
const (
	// FixtureConfigMaps: ~1 KiB ConfigMaps, all alike but for the name.
	FixtureConfigMaps = "configmaps"
	// FixturePods: ~6 KiB pods shaped like a production cluster's (see
	// ProductionPod).
	FixturePods = "pods"
)

// Fixtures lists the fixture kinds.
var Fixtures = []string{FixtureConfigMaps, FixturePods}

// PodsPerReplicaSet is how many consecutive bench pods share one
// ReplicaSet, and with it labels, annotations, images and owner.
const PodsPerReplicaSet = 10

// podNodes is how many node names the pods are spread over.
const podNodes = 100

// fixtureEpoch is the creation time written into pod status, fixed so
// every run builds the same objects.
var fixtureEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// hexOf is a stable fake digest: the hex SHA-256 of s.
func hexOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// fakeUID is a stable UUID-shaped string derived from s.
func fakeUID(s string) string {
	h := hexOf(s)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ProductionPod is the i-th pod of the pods fixture, in namespace ns. It looks like a Deployment's pod in a
// production cluster:
//
//   - owned by ReplicaSet app-NNNN-<hash> (ownerReferences, controller),
//     with PodsPerReplicaSet pods per ReplicaSet; labels (app, team, tier,
//     version, pod-template-hash) and annotations (checksum, prometheus,
//     restartedAt) are the same for every pod of a ReplicaSet;
//   - two containers (the app and a proxy sidecar) with images, env,
//     ports, resources, liveness and readiness probes, volume mounts;
//     volumes (projected service-account token, ConfigMap, emptyDir);
//     tolerations, node affinity, a node name among podNodes nodes;
//   - status: Running, four conditions, a pod IP, two container statuses
//     with container IDs and image digests;
//   - managedFields of three managers (kube-controller-manager's create,
//     kube-scheduler's and kubelet's status updates), as a real server
//     records them.
//
// Its JSON is about 6 KiB. The server stores what it is sent, so status
// and managedFields are written at create.
func ProductionPod(ns string, i int) *corev1.Pod {
	rs := i / PodsPerReplicaSet
	app := fmt.Sprintf("app-%04d", rs/3) // three ReplicaSets (revisions) per app
	team := fmt.Sprintf("team-%02d", rs%17)
	hash := hexOf(fmt.Sprintf("rs-%d", rs))[:10]
	rsName := app + "-" + hash
	rsUID := fakeUID("rs/" + rsName)
	node := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", (i%podNodes)/250, (i%podNodes)%250+1)
	podIP := fmt.Sprintf("10.%d.%d.%d", 100+i/65025%100, i/255%255, i%255+1)
	hostIP := fmt.Sprintf("10.0.%d.%d", (i%podNodes)/250, (i%podNodes)%250+1)
	version := fmt.Sprintf("v1.%d.%d", rs%7, rs%13)
	image := fmt.Sprintf("registry.example.com/%s/%s:%s", team, app, version)
	proxyImage := "registry.example.com/platform/envoy-proxy:v1.31.2"
	created := metav1.NewTime(fixtureEpoch.Add(time.Duration(i) * time.Second))
	isController, block := true, true
	grace := int64(30)
	tokenExp := int64(3607)
	labels := map[string]string{
		BenchLabel:                    "true",
		"app.kubernetes.io/name":      app,
		"app.kubernetes.io/part-of":   team,
		"app.kubernetes.io/version":   version,
		"app.kubernetes.io/component": "server",
		"tier":                        []string{"frontend", "backend", "worker"}[rs%3],
		"pod-template-hash":           hash,
	}
	annotations := map[string]string{
		"checksum/config":                   hexOf("config/" + rsName),
		"kubectl.kubernetes.io/restartedAt": fixtureEpoch.Add(time.Duration(rs) * time.Hour).Format(time.RFC3339),
		"prometheus.io/scrape":              "true",
		"prometheus.io/port":                "9090",
	}
	probe := func(path string, port int32, delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	env := func(pairs ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for j := 0; j+1 < len(pairs); j += 2 {
			out = append(out, corev1.EnvVar{Name: pairs[j], Value: pairs[j+1]})
		}
		return out
	}
	appEnv := append(env(
		"APP_NAME", app, "TEAM", team, "LOG_LEVEL", "info",
	), corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}})
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: "/etc/" + app, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
	}
	res := func(cpu, mem, cpuMax, memMax string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuMax), corev1.ResourceMemory: resource.MustParse(memMax)},
		}
	}
	ready := func(t corev1.PodConditionType, at time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(at))}
	}
	started := metav1.NewTime(created.Add(3 * time.Second))
	cstatus := func(name, img string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: name, Ready: true, Started: &block, Image: img,
			ImageID:     img[:strings.LastIndex(img, ":")] + "@sha256:" + hexOf("image/"+img),
			ContainerID: "containerd://" + hexOf(fmt.Sprintf("container/%d/%s", i, name)),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: ObjectName(i), GenerateName: rsName + "-",
			Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName,
				UID: types.UID(rsUID), Controller: &isController, BlockOwnerDeletion: &block}},
			ManagedFields: podManagedFields(created, rsUID, podIP),
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: image, Args: []string{"--config=/etc/" + app + "/config.yaml"},
				Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
				},
				Env: appEnv, Resources: res("250m", "512Mi", "1", "1Gi"), VolumeMounts: mounts,
				LivenessProbe: probe("/healthz", 8080, 10), ReadinessProbe: probe("/readyz", 8080, 5),
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}, {
				Name: "proxy", Image: proxyImage, Args: []string{"--concurrency=2"},
				Ports: []corev1.ContainerPort{{Name: "proxy-admin", ContainerPort: 15000, Protocol: corev1.ProtocolTCP}},
				Env:   env("SERVICE_NAME", app), Resources: res("100m", "128Mi", "500m", "256Mi"),
				VolumeMounts:           mounts[2:],
				ReadinessProbe:         probe("/ready", 15000, 1),
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &tokenExp}},
				}}}},
			},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: app, DeprecatedServiceAccount: app,
			NodeName: node, SchedulerName: corev1.DefaultSchedulerName,
			SecurityContext: &corev1.PodSecurityContext{},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.2xlarge", "m6i.4xlarge"}},
				}}},
			}}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrInt64(300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrInt64(300)},
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: team, Effect: corev1.TaintEffectNoSchedule},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				ready(corev1.PodInitialized, time.Second),
				ready(corev1.PodReady, 9*time.Second), ready(corev1.ContainersReady, 9*time.Second), ready(corev1.PodScheduled, 0),
			},
			HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}}, PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
			StartTime: &created, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{cstatus("app", image), cstatus("proxy", proxyImage)},
		},
	}
}

func ptrInt64(v int64) *int64 { return &v }

// podManagedFields is what a real server records for a Deployment's pod:
// the ReplicaSet controller's create, the scheduler's PodScheduled
// condition and the kubelet's status.
func podManagedFields(created metav1.Time, rsUID, podIP string) []metav1.ManagedFieldsEntry {
	entry := func(manager, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &created, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: sub}
	}
	container := `{".":{},"f:args":{},"f:env":{},"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{".":{},"f:httpGet":{".":{},"f:path":{},"f:port":{}},"f:initialDelaySeconds":{}},"f:name":{},"f:ports":{},"f:readinessProbe":{".":{},"f:httpGet":{".":{},"f:path":{},"f:port":{}},"f:initialDelaySeconds":{}},"f:resources":{".":{},"f:limits":{},"f:requests":{}},"f:volumeMounts":{}}`
	kcm := `{"f:metadata":{"f:annotations":{".":{},"f:checksum/config":{},"f:kubectl.kubernetes.io/restartedAt":{},"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/component":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{},"f:app.kubernetes.io/version":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"` + rsUID + `\"}":{}}},"f:spec":{"f:affinity":{".":{},"f:nodeAffinity":{".":{},"f:requiredDuringSchedulingIgnoredDuringExecution":{}}},"f:containers":{"k:{\"name\":\"app\"}":` + container + `,"k:{\"name\":\"proxy\"}":{".":{},"f:args":{},"f:env":{},"f:image":{},"f:name":{},"f:ports":{},"f:resources":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:serviceAccount":{},"f:serviceAccountName":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{},"f:volumes":{".":{},"k:{\"name\":\"config\"}":{".":{},"f:configMap":{".":{},"f:defaultMode":{},"f:name":{}},"f:name":{}},"k:{\"name\":\"tmp\"}":{".":{},"f:emptyDir":{},"f:name":{}}}}}`
	sched := `{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"PodScheduled\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}}}}`
	cond := func(t string) string {
		return `"k:{\"type\":\"` + t + `\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}`
	}
	kubelet := `{"f:status":{"f:conditions":{` + cond("ContainersReady") + `,` + cond("Initialized") + `,` + cond("Ready") +
		`},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"` + podIP + `\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`
	return []metav1.ManagedFieldsEntry{
		entry("kube-controller-manager", "", kcm),
		entry("kube-scheduler", "status", sched),
		entry("kubelet", "status", kubelet),
	}
}

// clientGoPodStatusUpdater writes pod status through the status
// subresource with client-go, which listwatch's client does not reach.
func clientGoPodStatusUpdater(t *Target) func(context.Context, *corev1.Pod) error {
	var once sync.Once
	var cs kubernetes.Interface
	var csErr error
	return func(ctx context.Context, p *corev1.Pod) error {
		once.Do(func() {
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				&clientcmd.ClientConfigLoadingRules{ExplicitPath: t.KubeconfigPath},
				&clientcmd.ConfigOverrides{CurrentContext: t.Context}).ClientConfig()
			if err != nil {
				csErr = err
				return
			}
			cfg.QPS, cfg.Burst = -1, 0
			cs, csErr = kubernetes.NewForConfig(cfg)
		})
		if csErr != nil {
			return fmt.Errorf("bench: client-go for pod status: %w", csErr)
		}
		_, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	}
}
