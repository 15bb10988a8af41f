package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectlAt runs kubectl with kubeconfig, its output with the namespace
// and server addresses masked.
func kubectlAt(t *testing.T, kubeconfig, ns string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	out = unknownStreamLog.ReplaceAll(out, nil)
	return strings.ReplaceAll(string(out), ns, "<ns>"), err
}

// unknownStreamLog matches the line kubectl's websocket client logs when a
// frame arrives on a stream it has not yet registered. kube's stream
// translator (apiserver's createWebSocketStreams, run by serve as by
// kube-apiserver) sends an empty frame on the lowest writable channel as
// soon as the websocket opens, and kubectl registers its streams only after
// its handshake returns: whether that frame wins is a race inside kubectl,
// on either server (it failed a comparison once in CI), so the line is
// dropped before outputs are compared.
var unknownStreamLog = regexp.MustCompile(`(?m)^E\d{4} [0-9:.]+ +\d+ websocket\.go:\d+\] Unknown stream id \d+, discarding message\n`)

// podsFixture creates, on one server, a node at 127.0.0.1 (no kubelet),
// an unscheduled pod and a Running pod on the node, through client-go.
func podsFixture(t *testing.T, cs *kubernetes.Clientset, ns, node string) {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	mk := func(name, nodeName string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "a"}},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		created, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if nodeName == "" {
			return
		}
		created.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("unscheduled", "")
	mk("run", node)
}

// TestKubectlPodSubresourcesAsKube: kubectl logs, exec, attach and
// port-forward print the same against listwatch as against a real
// kube-apiserver without kubelets, and client-go's GetLogs and EvictV1
// get the same answers.
func TestKubectlPodSubresourcesAsKube(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	kcfg, err := clientcmd.BuildConfigFromFlags("", ks.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "")
	ns := kubeNamespace(t, kubeClient(t, ks.AdminConfig()))
	ocfg := restConfig(t, s)
	kcs, ocs := kubernetes.NewForConfigOrDie(kcfg), kubernetes.NewForConfigOrDie(ocfg)
	if _, err := ocs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := "node-" + ns
	podsFixture(t, kcs, ns, node)
	podsFixture(t, ocs, ns, node)

	for _, args := range [][]string{
		{"logs", "unscheduled"},
		{"logs", "unscheduled", "-c", "x"},
		{"logs", "missing"},
		{"logs", "unscheduled", "--tail=-5"},
		{"exec", "unscheduled", "--", "ls"},
		{"exec", "missing", "--", "ls"},
		{"logs", "run"},             // kubelet at 127.0.0.1:10250: none there
		{"exec", "run", "--", "ls"}, // likewise
		{"attach", "unscheduled"},
		{"port-forward", "pod/unscheduled", "18080:80"},
	} {
		kout, kerr := kubectlAt(t, ks.KubeconfigPath, ns, append([]string{"-n", ns}, args...)...)
		oout, oerr := kubectlAt(t, s.KubeconfigPath(), ns, append([]string{"-n", ns}, args...)...)
		t.Logf("kubectl %v: %q", args, oout)
		if kout != oout || (kerr == nil) != (oerr == nil) {
			t.Errorf("kubectl %v:\n kube      %v %q\n listwatch %v %q", args, kerr, kout, oerr, oout)
		}
	}

	// client-go: GetLogs of an unscheduled pod is empty; of a missing pod
	// NotFound; EvictV1 of a pending pod deletes it.
	for name, cs := range map[string]*kubernetes.Clientset{"kube": kcs, "listwatch": ocs} {
		b, err := cs.CoreV1().Pods(ns).GetLogs("unscheduled", &corev1.PodLogOptions{}).DoRaw(t.Context())
		if err != nil || len(b) != 0 {
			t.Errorf("%s: GetLogs: %v %q", name, err, b)
		}
		if _, err := cs.CoreV1().Pods(ns).GetLogs("missing", &corev1.PodLogOptions{}).DoRaw(t.Context()); !apierrors.IsNotFound(err) {
			t.Errorf("%s: GetLogs of a missing pod: %v", name, err)
		}
		err = cs.CoreV1().Pods(ns).EvictV1(t.Context(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "unscheduled", Namespace: ns}})
		if err != nil {
			t.Errorf("%s: EvictV1: %v", name, err)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), "unscheduled", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: evicted pending pod: %v", name, err)
		}
	}
}

// TestKubectlDrain: kubectl drain cordons a node and evicts its pods
// through pods/eviction, respecting a PodDisruptionBudget: blocked while
// the budget allows no disruption (kubectl retries and times out, as
// against kube), done once it allows one.
func TestKubectlDrain(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	const ns = "default"
	node := "drained"
	podsFixture(t, cs, ns, node)
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "budget"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: new(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if pdb, err = cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := s.KubeconfigPath()
	out, err := kubectlAt(t, kubeconfig, ns, "drain", node, "--force", "--grace-period=0", "--timeout=2s")
	if err == nil || !strings.Contains(out, `Cannot evict pod as it would violate the pod's disruption budget.`) {
		t.Fatalf("drain under a blocking budget: %v\n%s", err, out)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Fatalf("node not cordoned: %v %+v", err, n.Spec)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "run", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod evicted despite its budget: %v", err)
	}

	pdb.Status.DisruptionsAllowed, pdb.Status.CurrentHealthy = 1, 2
	if _, err = cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = kubectlAt(t, kubeconfig, ns, "drain", node, "--force", "--grace-period=0", "--timeout=20s")
	if err != nil || !strings.Contains(out, "pod/run evicted") || !strings.Contains(out, "node/"+node+" drained") {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "run", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("drained pod: %v", err)
	}
	got, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "budget", metav1.GetOptions{})
	if err != nil || got.Status.DisruptionsAllowed != 0 || got.Status.DisruptedPods["run"].Time.IsZero() {
		t.Fatalf("budget after drain: %v %+v", err, got.Status)
	}
}

// TestUnknownStreamLogDropped: the race's log line, as kubectl 1.32 printed
// it in CI, is dropped and the error after it kept; other klog lines stay.
func TestUnknownStreamLogDropped(t *testing.T) {
	t.Parallel()
	const errLine = "error: Internal error occurred: error sending request\n"
	in := "E1206 10:11:28.747150   20802 websocket.go:296] Unknown stream id 1, discarding message\n" + errLine
	if got := string(unknownStreamLog.ReplaceAll([]byte(in), nil)); got != errLine {
		t.Errorf("got %q, want %q", got, errLine)
	}
	other := "E1206 10:11:28.747150   20802 websocket.go:296] stream closed\n" + errLine
	if got := string(unknownStreamLog.ReplaceAll([]byte(other), nil)); got != other {
		t.Errorf("got %q, want it unchanged", got)
	}
}
