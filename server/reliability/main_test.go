package reliability

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
	"github.com/listwatch/listwatch/wire"
)

var seedFlag = flag.Uint64("seed", 0, "run the chaos suite with this one seed only")

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if code == 0 {
		if err := goleak.Find(
			// The client's shared HTTP/2 connections may keep their read
			// loops until the process exits.
			goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
			goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// long reports whether the long versions were asked for.
func long() bool { return os.Getenv("LISTWATCH_LONG") == "1" }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer runs an in-process server on a free port until the test ends.
func startServer(t testing.TB, dir string, mutate ...func(*apiserver.Options)) *apiserver.APIServer {
	t.Helper()
	// With the controllers serve runs by default: the suite's
	// convergence checks hold with them writing alongside.
	return apiservertest.Start(t, dir, append([]func(*apiserver.Options){apiservertest.WithControllers}, mutate...)...).APIServer
}

// adminConfig is the admin client config of a kubeconfig, unthrottled.
func adminConfig(t testing.TB, kubeconfig string) *client.Config {
	t.Helper()
	cfg, err := client.LoadKubeconfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	cfg.Timeout = 30 * time.Second
	cfg.Logger = quietLogger()
	return cfg
}

func newClient(t testing.TB, cfg *client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

var (
	configmaps = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces = client.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

func configMap(ns, name string, data map[string]any) *object.Unstructured {
	return &object.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     data,
	}}
}

func createNamespace(t testing.TB, c *client.Client, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj := &object.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
	}}
	if _, err := client.NewResource[*object.Unstructured](c, namespaces).Create(ctx, obj); err != nil && !client.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	// The server's root CA publisher adds kube-root-ca.crt to a new
	// namespace: wait for it, so that the test's watchers of configmaps
	// start on a settled namespace.
	cms := client.NewResource[*object.Unstructured](c, configmaps).Namespace(ns)
	w, err := cms.Watch(ctx, wire.ListOptions{FieldSelector: "metadata.name=kube-root-ca.crt"})
	if err != nil {
		t.Fatalf("watch kube-root-ca.crt in %s: %v", ns, err)
	}
	defer w.Close()
	if ev, err := w.Next(); err != nil || ev.Type != wire.Added {
		t.Fatalf("kube-root-ca.crt in %s: %v %v", ns, ev.Type, err)
	}
}

// listAll reads every object of a namespace's configmaps in one LIST and
// returns key -> resourceVersion and the list's resourceVersion.
func listAll(ctx context.Context, r *client.Resource[*object.Unstructured]) (map[string]string, string, error) {
	l, err := r.List(ctx, wire.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	out := make(map[string]string, len(l.Items))
	for _, o := range l.Items {
		out[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out, l.Metadata.ResourceVersion, nil
}
