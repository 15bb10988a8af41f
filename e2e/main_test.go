// Package e2e runs listwatch serve in-process on 127.0.0.1 and drives it
// with its real peers: /usr/bin/kubectl, client-go and listwatch's own
// client and informer.
package e2e

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/apiserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// klog's flush daemon, started by client-go's init.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// client-go's shared transport cache keeps idle HTTP/2 connections
		// alive for the process lifetime.
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

type testServer struct {
	*apiserver.APIServer
	dir  string
	stop func()
}

// startServer runs a server on a free port with its data under dir (a new
// temp dir when empty) and stops it at the end of the test.
func startServer(t testing.TB, dir string, mutate ...func(*apiserver.Options)) *testServer {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	o := apiserver.Options{
		DataDir: dir,
		Port:    -1,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, m := range mutate {
		m(&o)
	}
	srv, err := apiserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	case <-time.After(90 * time.Second):
		cancel()
		t.Fatal("server did not become ready in 90s")
	}
	ts := &testServer{APIServer: srv, dir: dir}
	var stopped bool
	ts.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server Run: %v", err)
		}
	}
	t.Cleanup(ts.stop)
	return ts
}

// kubectl runs the real kubectl against s with default flags.
func kubectl(t testing.TB, s *testServer, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectlErr(t, s, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectlErr(t testing.TB, s *testServer, stdin string, args ...string) (string, error) {
	t.Helper()
	path := kubectlPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", s.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(s.dir, "home"))
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func kubectlPath(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/kubectl"); err == nil {
		return "/usr/bin/kubectl"
	}
	t.Skip("kubectl not installed")
	return ""
}
