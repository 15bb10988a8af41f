package e2e

// The kube_*_test.go files run listwatch's client library against a real
// kube-apiserver (internal/testsupport/kubeapiserver), started once for
// the package on first use and stopped after the last test. Without the
// binary they skip: run server/tools/kube/build.sh, or point
// $LISTWATCH_KUBE_APISERVER at one.

import (
	"context"
	"errors"
	"fmt"
	"os"
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

var kubeFixture struct {
	once sync.Once
	mu   sync.Mutex
	s    *kubeapiserver.Server
	err  error
}

// kubeServer returns the package's shared kube-apiserver, starting it on
// first use; it skips the test when the binary is not built.
func kubeServer(t testing.TB) *kubeapiserver.Server {
	t.Helper()
	if _, err := kubeapiserver.Binary(); errors.Is(err, kubeapiserver.ErrNotBuilt) {
		t.Skip(err)
	}
	kubeFixture.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, err := kubeapiserver.Start(ctx, kubeapiserver.Options{
			ExtraArgs: []string{"--watch-cache-sizes=" + kubeUncachedResource + "#0"},
		})
		kubeFixture.mu.Lock()
		kubeFixture.s, kubeFixture.err = s, err
		kubeFixture.mu.Unlock()
		if err == nil {
			fmt.Fprintf(os.Stderr, "kube-apiserver: etcd started in %v, kube-apiserver ready in %v\n",
				s.EtcdStartupTime.Round(time.Millisecond), s.StartupTime.Round(time.Millisecond))
		}
	})
	kubeFixture.mu.Lock()
	defer kubeFixture.mu.Unlock()
	if kubeFixture.err != nil {
		t.Fatalf("kube-apiserver: %v", kubeFixture.err)
	}
	return kubeFixture.s
}

// closeKubeServer stops the shared server, if it was started.
func closeKubeServer() error {
	kubeFixture.mu.Lock()
	defer kubeFixture.mu.Unlock()
	if kubeFixture.s == nil {
		return nil
	}
	err := kubeFixture.s.Close()
	kubeFixture.s = nil
	return err
}

// withKube runs the tests, then stops the shared kube-apiserver before
// goleak looks for leftover goroutines (its embedded etcd runs in this
// process).
type withKube struct{ m *testing.M }

func (w withKube) Run() int {
	code := w.m.Run()
	if err := closeKubeServer(); err != nil {
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
