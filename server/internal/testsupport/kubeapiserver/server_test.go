package kubeapiserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/listwatch/listwatch/client"
)

// TestStartAndClose starts the real server, checks both identities reach
// it, and that Close leaves no process and no directory behind.
func TestStartAndClose(t *testing.T) {
	if _, err := Binary(); errors.Is(err, ErrNotBuilt) {
		t.Skip(err)
	}
	s, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd started in %v, kube-apiserver ready in %v", s.EtcdStartupTime, s.StartupTime)
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	admin, err := client.New(s.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.CloseIdleConnections()
	var v struct {
		Major string `json:"major"`
	}
	if err := admin.GetJSON(t.Context(), "/version", &v); err != nil || v.Major == "" {
		t.Fatalf("/version: %+v %v", v, err)
	}
	kc, err := client.LoadKubeconfig(s.KubeconfigPath, "")
	if err != nil {
		t.Fatal(err)
	}
	if kc.Host != s.URL {
		t.Fatalf("kubeconfig host %q, want %q", kc.Host, s.URL)
	}
	user, err := client.New(s.UserConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer user.CloseIdleConnections()
	var ns map[string]any
	if err := user.GetJSON(context.Background(), "/api/v1/namespaces", &ns); !client.IsForbidden(err) {
		t.Fatalf("user lists namespaces: %v, want Forbidden", err)
	}
	pid, dir := s.PID, s.Dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kube-apiserver %d still there after Close: %v", pid, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there: %v", dir, err)
	}
}

// TestBinaryFromEnv: $LISTWATCH_KUBE_APISERVER wins, and a wrong path is
// ErrNotBuilt, with the message the tests skip with.
func TestBinaryFromEnv(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/kube-apiserver")
	_, err := Binary()
	if !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Binary() = %v, want ErrNotBuilt", err)
	}
	if want := "kube-apiserver not built: run server/tools/kube/build.sh"; err.Error()[:len(want)] != want {
		t.Fatalf("message %q", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvBinary, exe)
	if got, err := Binary(); err != nil || got != exe {
		t.Fatalf("Binary() = %q, %v; want %q", got, err, exe)
	}
}

// TestUserTokenKept: a second start on the same directory finds the
// user's line instead of adding another.
func TestUserTokenKept(t *testing.T) {
	path := t.TempDir() + "/tokens.csv"
	if err := os.WriteFile(path, []byte("admintoken,admin,admin,\"system:masters\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first, err := appendUserToken(path)
	if err != nil {
		t.Fatal(err)
	}
	second, err := appendUserToken(path)
	if err != nil || second != first {
		t.Fatalf("second call: %q, %v; want %q", second, err, first)
	}
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != 2 {
		t.Fatalf("%d lines:\n%s", n, data)
	}
}

// TestSourceRootIsModuleRoot: the compile-time root Binary looks under is
// the module's, wherever this package sits in the tree.
func TestSourceRootIsModuleRoot(t *testing.T) {
	root, ok := sourceRoot()
	if !ok {
		t.Skip("no caller information")
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatalf("sourceRoot %s: %v", root, err)
	}
	if !strings.HasPrefix(string(mod), "module github.com/listwatch/listwatch/server\n") {
		t.Fatalf("sourceRoot %s holds another module's go.mod", root)
	}
}
