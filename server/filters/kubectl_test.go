package filters

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/server/internal/pki"
)

// TestKubeconfigWithRealClients: the kubeconfig pki writes (token and client
// certificate together) works for client-go and kubectl against the chain
// over real TLS, and they are admin.
func TestKubeconfigWithRealClients(t *testing.T) {
	e := newEnv(t, envConfig{})
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := pki.WriteKubeconfig(path, e.srv.URL, e.creds); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods").DoRaw(ctx)
	if err != nil {
		t.Fatalf("client-go: %v", err)
	}
	var got echo
	if err := json.Unmarshal(raw, &got); err != nil || got.User != "admin" || got.Verb != "list" {
		t.Errorf("client-go saw %s (%v)", raw, err)
	}

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", path, "get", "--raw", "/api/v1/namespaces/default/pods").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get --raw: %v\n%s", err, out)
	}
	got = echo{}
	if err := json.Unmarshal(out, &got); err != nil || got.User != "admin" || !contains(got.Groups, "system:masters") {
		t.Errorf("kubectl saw %s (%v)", out, err)
	}

	// kubectl --as runs as bob, with bob's rights (none here), not the
	// admin's; with --as-group system:masters, as bob in that group.
	out, err = exec.CommandContext(ctx, kubectl, "--kubeconfig", path, "--as", "bob", "get", "--raw", "/api/v1/namespaces/default/pods").CombinedOutput()
	if want := `Error from server (Forbidden): pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"`; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("kubectl --as bob: %v\n%s\nwant %s", err, out, want)
	}
	out, err = exec.CommandContext(ctx, kubectl, "--kubeconfig", path, "--as", "bob", "--as-group", "system:masters", "get", "--raw", "/api/v1/namespaces/default/pods").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl --as bob --as-group system:masters: %v\n%s", err, out)
	}
	got = echo{}
	if err := json.Unmarshal(out, &got); err != nil || got.User != "bob" || !slices.Equal(got.Groups, []string{"system:masters", "system:authenticated"}) {
		t.Errorf("kubectl --as bob --as-group system:masters: the API saw %s (%v)", out, err)
	}
}
