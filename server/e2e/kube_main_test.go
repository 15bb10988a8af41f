package e2e

// The kube_*_test.go files run listwatch's client library against a real
// kube-apiserver (internal/testsupport/kubeapiserver), started on first
// use (kubePool) and stopped after the last test. Without the
// binary they skip: run server/tools/kube/build.sh, or point
// $LISTWATCH_KUBE_APISERVER at one.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
	"github.com/listwatch/listwatch/wire"
)

// kubeUncachedResource has no watch cache in the shared kube-apiserver,
// so its watches read etcd directly and see etcd's compaction (410).
const kubeUncachedResource = "podtemplates"

// The package's kube-apiservers. Every test runs in parallel with others
// (-parallel, by default GOMAXPROCS, at a time), and a test that asks for
// a kube-apiserver holds one alone from its first ask to its end, so each
// instance still meets tests one after another, as the single shared one
// did: what a test leaves (CRDs, APIServices, namespaces that stay
// Terminating) is seen only by tests that come after it on its instance.
// An instance is started when a test asks and none is free, so there are
// at most as many as tests run at once.
var kubePool struct {
	mu   sync.Mutex
	all  []*kubeapiserver.Server
	free []*kubeapiserver.Server
	held map[string]*kubeapiserver.Server // by top-level test name
	err  error                            // the first failed start
}

// kubeServer returns the kube-apiserver t's top-level test holds, taking
// a free one (or starting one) on its first ask; it skips the test when
// the binary is not built.
func kubeServer(t testing.TB) *kubeapiserver.Server {
	t.Helper()
	if _, err := kubeapiserver.Binary(); errors.Is(err, kubeapiserver.ErrNotBuilt) {
		t.Skip(err)
	}
	top, _, _ := strings.Cut(t.Name(), "/")
	kubePool.mu.Lock()
	if s := kubePool.held[top]; s != nil {
		kubePool.mu.Unlock()
		return s
	}
	if kubePool.err != nil {
		err := kubePool.err
		kubePool.mu.Unlock()
		t.Fatalf("kube-apiserver: %v", err)
	}
	var s *kubeapiserver.Server
	if n := len(kubePool.free); n > 0 {
		s, kubePool.free = kubePool.free[n-1], kubePool.free[:n-1]
	}
	kubePool.mu.Unlock()
	if s == nil {
		var err error
		if s, err = startKubeServer(); err != nil {
			kubePool.mu.Lock()
			if kubePool.err == nil {
				kubePool.err = err
			}
			kubePool.mu.Unlock()
			t.Fatalf("kube-apiserver: %v", err)
		}
	}
	kubePool.mu.Lock()
	if kubePool.held == nil {
		kubePool.held = map[string]*kubeapiserver.Server{}
	}
	kubePool.held[top] = s
	kubePool.mu.Unlock()
	// Handed back when the asking test ends: the top-level test, or the
	// subtest that asked first (then a later subtest asks again).
	t.Cleanup(func() {
		kubePool.mu.Lock()
		defer kubePool.mu.Unlock()
		delete(kubePool.held, top)
		kubePool.free = append(kubePool.free, s)
	})
	return s
}

func startKubeServer() (*kubeapiserver.Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := kubeapiserver.Start(ctx, kubeapiserver.Options{
		ExtraArgs: []string{"--watch-cache-sizes=" + kubeUncachedResource + "#0"},
	})
	if err != nil {
		return nil, err
	}
	kubePool.mu.Lock()
	kubePool.all = append(kubePool.all, s)
	n := len(kubePool.all)
	kubePool.mu.Unlock()
	fmt.Fprintf(os.Stderr, "kube-apiserver %d: etcd started in %v, kube-apiserver ready in %v\n",
		n, s.EtcdStartupTime.Round(time.Millisecond), s.StartupTime.Round(time.Millisecond))
	return s, nil
}

// closeKubeServers stops the package's kube-apiservers.
func closeKubeServers() error {
	kubePool.mu.Lock()
	defer kubePool.mu.Unlock()
	var errs []error
	for _, s := range kubePool.all {
		errs = append(errs, s.Close())
	}
	kubePool.all, kubePool.free, kubePool.held = nil, nil, nil
	return errors.Join(errs...)
}

// withKube runs the tests, then stops the kube-apiservers before
// goleak looks for leftover goroutines (its embedded etcd runs in this
// process).
type withKube struct{ m *testing.M }

func (w withKube) Run() int {
	code := w.m.Run()
	if err := closeKubeServers(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping kube-apiserver:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// kubeClient is our client for cfg, closed when the test ends.
func kubeClient(t testing.TB, cfg *client.Config) *client.Client {
	t.Helper()
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

var kubeNamespaceSeq atomic.Int64

// kubeNamespace creates a fresh namespace for one test on the shared
// server and deletes it when the test ends.
func kubeNamespace(t testing.TB, c *client.Client) string {
	t.Helper()
	name := fmt.Sprintf("lw-e2e-%d-%d", time.Now().UnixNano()%1e6, kubeNamespaceSeq.Add(1))
	nss := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	ns := &object.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if _, err := nss.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Without a controller manager the namespace stays Terminating;
		// that is fine for a throw-away server.
		_, _ = nss.Delete(ctx, name, wire.DeleteOptions{})
	})
	return name
}

// reflectorCounts counts what a reflector did, through its metrics hooks.
type reflectorCounts struct {
	lists, watches atomic.Int64
	mu             sync.Mutex
	relists        []informer.RelistReason
	relisted       chan informer.RelistReason
}

func newReflectorCounts() *reflectorCounts {
	return &reflectorCounts{relisted: make(chan informer.RelistReason, 100)}
}

func (c *reflectorCounts) NewReflectorMetrics(string, func() informer.ReflectorSnapshot) informer.ReflectorMetrics {
	return c
}
func (c *reflectorCounts) NewInformerMetrics(string, func() informer.InformerSnapshot) {}
func (c *reflectorCounts) Listed(int, time.Duration, error)                            { c.lists.Add(1) }
func (c *reflectorCounts) Watched(int, time.Duration, bool, error)                     { c.watches.Add(1) }
func (c *reflectorCounts) Relisted(r informer.RelistReason) {
	c.mu.Lock()
	c.relists = append(c.relists, r)
	c.mu.Unlock()
	select {
	case c.relisted <- r:
	default:
	}
}
