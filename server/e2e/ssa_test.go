package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestKubectlServerSideApply drives server-side apply with real kubectl
// (1.27 and the installed one): apply --server-side creates and updates,
// another field manager's change is a conflict with kube's text,
// --force-conflicts takes the field over, get --show-managed-fields shows
// the managers, and a client-side apply followed by a server-side one
// migrates ownership so that a field dropped from the file is removed.
func TestKubectlServerSideApply(t *testing.T) {
	t.Parallel()
	bins := []string{"/usr/lib/google-cloud-sdk/bin/kubectl.1.27", kubectlPath(t)}
	s := startServer(t, "")
	for i, bin := range bins {
		if _, err := os.Stat(bin); err != nil {
			t.Logf("%s: %v", bin, err)
			continue
		}
		t.Run(filepath.Base(bin), func(t *testing.T) {
			ns := "ssa-" + string(rune('a'+i))
			run := func(stdin string, args ...string) (string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", s.KubeconfigPath(), "-n", ns}, args...)...)
				cmd.Env = append(os.Environ(), "HOME="+filepath.Join(s.Dir, "home-"+ns))
				if stdin != "" {
					cmd.Stdin = strings.NewReader(stdin)
				}
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			must := func(stdin string, args ...string) string {
				t.Helper()
				out, err := run(stdin, args...)
				if err != nil {
					t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return out
			}
			must("", "create", "namespace", ns)
			cm := func(name, data string) string {
				return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n" + data
			}
			if out := must(cm("cm", "  k: '1'\n"), "apply", "--server-side", "-f", "-"); !strings.Contains(out, "configmap/cm serverside-applied") {
				t.Fatalf("apply: %s", out)
			}
			out, err := run(cm("cm", "  k: '2'\n"), "apply", "--server-side", "--field-manager=other", "-f", "-")
			if err == nil || !strings.Contains(out, `Apply failed with 1 conflict: conflict with "kubectl": .data.k`) {
				t.Fatalf("conflict: %v\n%s", err, out)
			}
			must(cm("cm", "  k: '2'\n"), "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-")
			yaml := must("", "get", "configmap", "cm", "-o", "yaml", "--show-managed-fields")
			if !strings.Contains(yaml, "manager: other") || !strings.Contains(yaml, "operation: Apply") || !strings.Contains(yaml, "k: \"2\"") {
				t.Fatalf("managed fields:\n%s", yaml)
			}
			if plain := must("", "get", "configmap", "cm", "-o", "yaml"); strings.Contains(plain, "managedFields") {
				t.Fatalf("managedFields shown without --show-managed-fields:\n%s", plain)
			}

			// Client-side apply, then server-side: kubectl migrates the
			// client-side manager's fields, so dropping b removes it.
			must(cm("mig", "  a: '1'\n  b: '2'\n"), "apply", "-f", "-")
			must(cm("mig", "  a: '1'\n"), "apply", "--server-side", "-f", "-")
			got := must("", "get", "configmap", "mig", "-o", "jsonpath={.data}")
			if strings.Contains(got, `"b"`) || !strings.Contains(got, `"a":"1"`) {
				t.Fatalf("after migration data %s", got)
			}
		})
	}
}

// TestClientGoApply: client-go's typed Apply with an apply configuration
// and the dynamic client's Apply create, update and own fields.
func TestClientGoApply(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cfg := restConfig(t, s)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cfg)
	cms := cs.CoreV1().ConfigMaps("default")
	got, err := cms.Apply(ctx, corev1ac.ConfigMap("typed", "default").WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "typed-tester"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["a"] != "1" || len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != "typed-tester" || got.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("typed apply: %+v", got)
	}
	// Extract gives back what the manager owns.
	ac, err := corev1ac.ExtractConfigMap(got, "typed-tester")
	if err != nil || ac.Data["a"] != "1" {
		t.Fatalf("extract: %v %+v", err, ac)
	}
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("typed", "default").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "other"}); err == nil ||
		!strings.Contains(err.Error(), `conflict with "typed-tester": .data.a`) {
		t.Fatalf("conflict: %v", err)
	}

	dyn := dynamic.NewForConfigOrDie(cfg)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "dyn", "namespace": "default"}, "data": map[string]any{"x": "1"}}}
	out, err := dyn.Resource(gvr).Namespace("default").Apply(ctx, "dyn", u, metav1.ApplyOptions{FieldManager: "dyn-tester"})
	if err != nil {
		t.Fatal(err)
	}
	if out.GetManagedFields()[0].Manager != "dyn-tester" {
		t.Fatalf("dynamic apply: %v", out.GetManagedFields())
	}
	var typed *corev1.ConfigMap
	if typed, err = cms.Get(ctx, "dyn", metav1.GetOptions{}); err != nil || typed.Data["x"] != "1" {
		t.Fatalf("dynamic apply stored %v %+v", err, typed)
	}
}
