package kubeapiserver

import (
	"context"
	"errors"
	"fmt"
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

// TestLogExcerpt: a failed start's message names the log's error lines,
// however early they came, and its last lines, each cut short.
func TestLogExcerpt(t *testing.T) {
	var log strings.Builder
	log.WriteString("I1206 13:25:20.000000   1 server.go:151] Version: v1.37.2\n")
	log.WriteString("E1206 13:25:20.100000   1 run.go:72] \"command failed\" err=\"failed to create listener: address already in use\"\n")
	for i := range 100 {
		fmt.Fprintf(&log, "I1206 13:25:21.%06d   1 controller.go:1] line %d %s\n", i, i, strings.Repeat("x", 400))
	}
	got := logExcerpt([]byte(log.String()))
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if !strings.Contains(lines[0], "address already in use") {
		t.Errorf("first line %q, want the error line", lines[0])
	}
	if want := "[… 90 lines of the log; its last 12:]"; lines[1] != want {
		t.Errorf("second line %q, want %q", lines[1], want)
	}
	if len(lines) != 14 || !strings.Contains(lines[13], "line 99 ") {
		t.Errorf("%d lines, last %q; want 14, ending with line 99", len(lines), lines[len(lines)-1])
	}
	for _, l := range lines {
		if len(l) > 300+len("…") {
			t.Errorf("line of %d bytes not cut: %.60q", len(l), l)
		}
	}
	if got := logExcerpt([]byte("I1 short\n")); got != "I1 short\n" {
		t.Errorf("short log: %q", got)
	}
}
