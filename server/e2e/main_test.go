// Package e2e runs listwatch serve in-process on 127.0.0.1 and drives it
// with its real peers: /usr/bin/kubectl, client-go and listwatch's own
// client and informer.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(withKube{m},
		// klog's flush daemon, started by client-go's init.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// client-go's shared transport cache keeps idle HTTP/2 connections
		// alive for the process lifetime.
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// apimachinery's watch.Filter, which controller-runtime wraps
		// around a metadata-only informer's watch (newGVKFixupWatcher):
		// once its reader has stopped, an event already taken blocks its
		// goroutine on the send for good (TestControllerRuntimeSameAsKube,
		// against either server). Nothing in listwatch uses watch.Filter.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
	)
}

type testServer = apiservertest.Server

// startServer runs a server for the test; see apiservertest.Start.
func startServer(t testing.TB, dir string, mutate ...func(*apiserver.Options)) *testServer {
	t.Helper()
	return apiservertest.Start(t, dir, mutate...)
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
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(s.Dir, "home"))
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
