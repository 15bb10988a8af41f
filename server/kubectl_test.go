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
	crdFile := filepath.Join(dir, "crd.yaml")
	os.WriteFile(crdFile, []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
`), 0o600)
	crFile := filepath.Join(dir, "cr.yaml")
	os.WriteFile(crFile, []byte("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  color: red\n"), 0o600)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"apply", "-f", crdFile}, ""},
		{[]string{"wait", "--for", "condition=established", "--timeout=20s", "crd/widgets.example.com"}, "condition met"},
		{[]string{"apply", "-f", crFile}, ""},
		{[]string{"get", "wd"}, "red"},
		{[]string{"get", "widgets", "-A", "-o", "wide"}, "default"},
		{[]string{"delete", "-f", crdFile}, ""},
		{[]string{"create", "-f", manifest}, ""},
		{[]string{"get", "configmaps"}, "k1"},
		{[]string{"get", "cm", "k1", "-o", "yaml"}, "resourceVersion"},
		{[]string{"apply", "-f", manifest}, ""},
		{[]string{"label", "cm", "k1", "tier=web"}, ""},
		{[]string{"patch", "cm", "k1", "-p", `{"data":{"c":"d"}}`}, ""},
		{[]string{"get", "ns"}, "kube-system"},
		{[]string{"get", "all", "-A"}, ""},
		{[]string{"create", "namespace", "scratch"}, ""},
		{[]string{"create", "configmap", "x", "-n", "scratch", "--from-literal=a=b"}, ""},
		// No namespace controller runs here: kubectl's default --wait
		// would wait for ever on the Terminating namespace.
		{[]string{"delete", "ns", "scratch", "--wait=false"}, `namespace "scratch" deleted`},
		{[]string{"delete", "-f", manifest}, ""},
	}
	for _, s := range steps {
		out, err := e.kubectl(s.args...)
		t.Logf("kubectl %s:\n%s", strings.Join(s.args, " "), out)
		if err != nil {
			t.Errorf("kubectl %s: %v", strings.Join(s.args, " "), err)
		}
		if !strings.Contains(out, s.want) {
			t.Errorf("kubectl %s: output lacks %q", strings.Join(s.args, " "), s.want)
		}
	}
}
