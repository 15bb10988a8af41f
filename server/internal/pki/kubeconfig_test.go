package pki

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteKubeconfigLoadsInClientGo(t *testing.T) {
	dir := t.TempDir()
	c, err := EnsureCredentials(filepath.Join(dir, "pki"), nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sub", "kubeconfig")
	const server = "https://127.0.0.1:6443"
	if err := WriteKubeconfig(path, server, c); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("kubeconfig mode %o, want 600", m)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.Validate(*cfg); err != nil {
		t.Fatalf("clientcmd.Validate: %v", err)
	}
	if cfg.CurrentContext != "listwatch" {
		t.Errorf("current-context = %q", cfg.CurrentContext)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != server || rc.BearerToken != c.AdminToken ||
		!bytes.Equal(rc.CAData, c.CAPEM) || !bytes.Equal(rc.CertData, c.AdminCertPEM) || !bytes.Equal(rc.KeyData, c.AdminKeyPEM) {
		t.Errorf("rest.Config = host %q token %t ca %t cert %t key %t",
			rc.Host, rc.BearerToken == c.AdminToken, bytes.Equal(rc.CAData, c.CAPEM),
			bytes.Equal(rc.CertData, c.AdminCertPEM), bytes.Equal(rc.KeyData, c.AdminKeyPEM))
	}
	// Rewriting replaces the file atomically and leaves no temp files.
	if err := WriteKubeconfig(path, "https://127.0.0.1:7443", c); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the kubeconfig", len(ents))
	}
}

func TestWriteKubeconfigKubectlConfigView(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	dir := t.TempDir()
	c, err := EnsureCredentials(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(path, "https://127.0.0.1:6443", c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, "config", "view", "--kubeconfig", path, "--raw", "--minify",
		"-o", "jsonpath={.users[0].user.token} {.clusters[0].cluster.server} {.current-context}").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl config view: %v\n%s", err, out)
	}
	want := c.AdminToken + " https://127.0.0.1:6443 listwatch"
	if strings.TrimSpace(string(out)) != want {
		t.Errorf("kubectl config view = %q, want %q", out, want)
	}
}

func TestWriteKubeconfigNoCredentials(t *testing.T) {
	if err := WriteKubeconfig(filepath.Join(t.TempDir(), "k"), "https://x", nil); err == nil {
		t.Error("want an error without credentials")
	}
}
