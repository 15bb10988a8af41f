package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl runs the real kubectl against e and returns its combined output.
func (e *env) kubectl(args ...string) (string, error) {
	e.t.Helper()
	kc := filepath.Join(e.t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + e.url +
		"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kc, "--cache-dir", filepath.Join(e.t.TempDir(), "cache")}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestKubectlSmoke(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("no kubectl")
	}
	e := newEnv(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "cm.yaml")
	os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k1\n  labels: {app: x}\ndata:\n  a: b\n"), 0o600)
	steps := [][]string{
		{"create", "-f", manifest},
		{"get", "configmaps"},
		{"get", "cm", "k1", "-o", "yaml"},
		{"apply", "-f", manifest},
		{"label", "cm", "k1", "tier=web"},
		{"patch", "cm", "k1", "-p", `{"data":{"c":"d"}}`},
		{"get", "ns"},
		{"get", "all", "-A"},
		{"create", "namespace", "scratch"},
		{"create", "configmap", "x", "-n", "scratch", "--from-literal=a=b"},
		{"delete", "ns", "scratch"},
		{"delete", "-f", manifest},
	}
	for _, s := range steps {
		out, err := e.kubectl(s...)
		t.Logf("kubectl %s:\n%s", strings.Join(s, " "), out)
		if err != nil {
			t.Errorf("kubectl %s: %v", strings.Join(s, " "), err)
		}
	}
}
