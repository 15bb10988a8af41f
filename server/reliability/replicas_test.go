package reliability

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/internal/testsupport/faultproxy"
	"github.com/listwatch/listwatch/wire"
)

// TestReplicasShareOneCluster runs two servers on one 3-member etcd
// cluster. Writes through either are seen through the other's watch cache;
// an informer moved from one to the other (through a proxy that is
// re-pointed and cut) converges; kubectl works against both.
func TestReplicasShareOneCluster(t *testing.T) {
	cluster := startCluster(t)
	shared := t.TempDir() // both replicas use the same credentials, as kube-apiservers share a CA
	replica := func(name string) *apiserver.APIServer {
		return startServer(t, shared, func(o *apiserver.Options) {
			o.EtcdServers = cluster.Endpoints()
			o.KubeconfigPath = filepath.Join(shared, "kubeconfig-"+name)
			o.ServiceNodePortRange = "30100-30103"
		})
	}
	a := replica("a")
	b := replica("b")
	ra := configmapsOf(t, a.KubeconfigPath(), "default")
	rb := configmapsOf(t, b.KubeconfigPath(), "default")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A watch on B sees a write on A.
	_, listRV, err := listAll(ctx, rb)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rb.Watch(ctx, wire.ListOptions{ResourceVersion: listRV})
	if err != nil {
		t.Fatal(err)
	}
	created, err := ra.Create(ctx, configMap("default", "from-a", map[string]any{"x": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := w.Next()
	w.Close()
	if err != nil || ev.Type != wire.Added || ev.Object.GetName() != "from-a" || ev.Object.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("B's watch: %+v, %v; want ADDED from-a@%s", ev, err, created.GetResourceVersion())
	}
	// A NotOlderThan list on A sees a write on B: A's cache waits until it
	// has caught up with the revision.
	fromB, err := rb.Create(ctx, configMap("default", "from-b", nil))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ra.List(ctx, wire.ListOptions{ResourceVersion: fromB.GetResourceVersion(), ResourceVersionMatch: wire.MatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	if !containsName(l.Items, "from-b") {
		t.Fatalf("A's NotOlderThan list at %s lacks from-b", fromB.GetResourceVersion())
	}

	t.Run("service allocations are shared", func(t *testing.T) { sharedAllocations(t, a, b) })
	t.Run("informer switches replicas", func(t *testing.T) { informerSwitch(t, a, b, ra, rb) })
	t.Run("kubectl switches replicas", func(t *testing.T) { kubectlSwitch(t, a, b) })
}

func containsName(items []*object.Unstructured, name string) bool {
	for _, o := range items {
		if o.GetName() == name {
			return true
		}
	}
	return false
}

func informerSwitch(t *testing.T, a, b *apiserver.APIServer, ra, rb *client.Resource[*object.Unstructured]) {
	ua, _ := url.Parse(a.URL())
	ub, _ := url.Parse(b.URL())
	proxy, err := faultproxy.New(ua.Host, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	defer func() { cancel(); bg.Wait() }()
	bg.Add(1)
	go func() { defer bg.Done(); _ = proxy.Run(ctx) }()

	cfg := adminConfig(t, a.KubeconfigPath())
	cfg.Host = "https://" + proxy.Addr()
	inf, err := informer.New[*object.Unstructured](
		client.NewResource[*object.Unstructured](newClient(t, cfg), configmaps).Namespace("default"),
		informer.Options[*object.Unstructured]{Reflector: informer.ReflectorOptions{
			Logger:  quietLogger(),
			Backoff: informer.BackoffOptions{Initial: 20 * time.Millisecond, Max: 500 * time.Millisecond},
		}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHistory()
	if _, err := inf.AddEventHandler(h.handler(), informer.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		if err := inf.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("informer: %v", err)
		}
	}()
	infs := []*watched{{name: "switching", inf: inf, hist: h}}
	for i := range 4 {
		writer, target := ra, ub.Host
		if i%2 == 1 {
			writer, target = rb, ua.Host
		}
		for j := range 20 {
			if _, err := writer.Create(ctx, configMap("default", fmt.Sprintf("sw-%d-%d", i, j), nil)); err != nil {
				t.Fatal(err)
			}
		}
		awaitConvergence(t, ctx, ra, infs, 30*time.Second)
		proxy.SetTarget(target)
		proxy.DropAll()
	}
	awaitConvergence(t, ctx, rb, infs, 30*time.Second)
	_, violations, events := h.snapshot()
	for _, v := range violations {
		t.Error(v)
	}
	t.Logf("informer switched replicas 4 times; %d handler events, %d connections", events, proxy.Stats().Conns)
}

func kubectlSwitch(t *testing.T, a, b *apiserver.APIServer) {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		bin = "/usr/bin/kubectl"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("kubectl not installed")
		}
	}
	home := t.TempDir()
	run := func(server, stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// The replicas share credentials, so A's kubeconfig works for B
		// with --server: this is kubectl switching replicas.
		full := append([]string{"--kubeconfig", a.KubeconfigPath(), "--server", server}, args...)
		cmd := exec.CommandContext(ctx, bin, full...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(a.URL(), "", "create", "configmap", "kubectl-a", "--from-literal=k=va")
	if got := run(b.URL(), "", "get", "configmap", "kubectl-a", "-o", "jsonpath={.data.k}"); got != "va" {
		t.Fatalf("B sees kubectl-a data %q", got)
	}
	run(b.URL(), "", "label", "configmap", "kubectl-a", "via=b")
	if got := run(a.URL(), "", "get", "configmap", "-l", "via=b", "-o", "name"); strings.TrimSpace(got) != "configmap/kubectl-a" {
		t.Fatalf("A lists %q for via=b", got)
	}
	run(a.URL(), "", "delete", "configmap", "kubectl-a")
	out := run(b.URL(), "", "get", "configmap", "kubectl-a", "--ignore-not-found", "-o", "name")
	if strings.TrimSpace(out) != "" {
		t.Fatalf("B still has kubectl-a after delete on A: %q", out)
	}
}

// sharedAllocations: node ports and cluster IPs allocated through one
// replica are taken for the other (the node-port bitmap and the
// IPAddress objects live in etcd), so the range fills up across both.
func sharedAllocations(t *testing.T, a, b *apiserver.APIServer) {
	ctx := t.Context()
	clients := []kubernetes.Interface{}
	for _, s := range []*apiserver.APIServer{a, b} {
		cfg, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, kubernetes.NewForConfigOrDie(cfg))
	}
	svc := func(name string, nodePort int32, clusterIP string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: clusterIP,
				Ports: []corev1.ServicePort{{Port: 80, NodePort: nodePort}}}}
	}
	// The four ports of the range: two through each replica.
	seen := map[int32]bool{}
	var firstIP string
	for i := range 4 {
		got, err := clients[i%2].CoreV1().Services("default").Create(ctx, svc(fmt.Sprintf("np%d", i), 0, ""), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
		p := got.Spec.Ports[0].NodePort
		if seen[p] {
			t.Fatalf("node port %d given twice", p)
		}
		seen[p] = true
		if i == 0 {
			firstIP = got.Spec.ClusterIP
		}
	}
	for i, c := range clients {
		_, err := c.CoreV1().Services("default").Create(ctx, svc("full", 0, ""), metav1.CreateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed to allocate a nodePort: range is full") {
			t.Fatalf("replica %d: a fifth node port: %v", i, err)
		}
		_, err = c.CoreV1().Services("default").Create(ctx, svc("taken", 30100, ""), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided port is already allocated") {
			t.Fatalf("replica %d: a taken node port: %v", i, err)
		}
	}
	_, err := clients[1].CoreV1().Services("default").Create(ctx, svc("ip", 0, firstIP), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("B: A's cluster IP: %v", err)
	}
	// Released through one, free for the other.
	if err := clients[0].CoreV1().Services("default").Delete(ctx, "np1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[1].CoreV1().Services("default").Create(ctx, svc("again", 0, ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("B after A's delete: %v", err)
	}
}
