package examples_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/server/apiserver"
)

// kubeconfig is the admin kubeconfig of the server every example talks to,
// as ~/.kube/config would be for a real cluster.
var kubeconfig string

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(withServer{m}, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// withServer runs the tests with an in-process listwatch server on
// 127.0.0.1, stopped (every goroutine gone) before goleak looks.
type withServer struct{ m *testing.M }

func (w withServer) Run() int {
	dir, err := os.MkdirTemp("", "listwatch-examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := apiserver.New(apiserver.Options{DataDir: dir, Port: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
		}
	}()
	select {
	case <-srv.Ready():
	case err := <-done:
		done <- err
		fmt.Fprintln(os.Stderr, "server did not start:", err)
		return 1
	}
	kubeconfig = srv.KubeconfigPath()
	if err := waitReadyz(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return w.m.Run()
}

// waitReadyz polls /readyz: the default namespaces exist only once the
// server reports ready.
func waitReadyz(ctx context.Context) error {
	c := newClient()
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := c.Do(ctx, http.MethodGet, "/readyz", nil, nil)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz: %w", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// newClient is what both articles' programs start with:
// clientcmd.BuildConfigFromFlags + kubernetes.NewForConfig.
func newClient() *client.Client {
	cfg, err := client.LoadKubeconfig(kubeconfig, "")
	if err != nil {
		panic(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := client.New(cfg)
	if err != nil {
		panic(err)
	}
	return c
}
