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
