package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestKubectl(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")

	t.Run("api-resources", func(t *testing.T) {
		out := kubectl(t, s, "", "api-resources")
		for _, want := range []string{"configmaps", "namespaces", "pods", "secrets", "services", "serviceaccounts", "events", "leases", "customresourcedefinitions"} {
			if !strings.Contains(out, want) {
				t.Errorf("api-resources lacks %s:\n%s", want, out)
			}
		}
	})

	t.Run("aggregated discovery", func(t *testing.T) {
		// kubectl 1.30+ asks /api and /apis for aggregated discovery and
		// reads the legacy per-group documents only when it is refused;
		// -v=8 logs each response's headers.
		out := kubectl(t, s, "", "api-resources", "--cache-dir", t.TempDir(), "-v=8")
		if !strings.Contains(out, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") {
			t.Fatalf("kubectl did not get aggregated discovery:\n%s", out)
		}
		if strings.Contains(out, "/apis/coordination.k8s.io/v1?") || strings.Contains(out, "/api/v1?") {
			t.Errorf("kubectl fell back to the legacy documents:\n%s", out)
		}
		if !strings.Contains(out, "leases") || !strings.Contains(out, "customresourcedefinitions") {
			t.Errorf("api-resources:\n%s", out)
		}
	})

	t.Run("create apply get label delete", func(t *testing.T) {
		cm := `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
data:
  color: blue
`
		if out := kubectl(t, s, cm, "create", "-f", "-"); !strings.Contains(out, "configmap/settings created") {
			t.Fatalf("create: %s", out)
		}
		app := strings.Replace(cm, "settings", "applied", 1)
		if out := kubectl(t, s, app, "apply", "-f", "-"); !strings.Contains(out, "configmap/applied created") {
			t.Fatalf("first apply: %s", out)
		}
		changed := strings.Replace(app, "color: blue", "color: green\n  size: large", 1)
		if out := kubectl(t, s, changed, "apply", "-f", "-"); !strings.Contains(out, "configmap/applied configured") {
			t.Fatalf("second apply: %s", out)
		}
		if out := kubectl(t, s, "", "get", "configmap", "applied", "-o", "jsonpath={.data.color}/{.data.size}"); out != "green/large" {
			t.Fatalf("after apply: %q", out)
		}
		out := kubectl(t, s, "", "get", "configmaps")
		if !strings.Contains(out, "NAME") || !strings.Contains(out, "AGE") || !strings.Contains(out, "settings") {
			t.Fatalf("get table: %s", out)
		}
		yaml := kubectl(t, s, "", "get", "configmap", "settings", "-o", "yaml")
		for _, want := range []string{"kind: ConfigMap", "color: blue", "resourceVersion:", "uid:", "creationTimestamp:"} {
			if !strings.Contains(yaml, want) {
				t.Errorf("-o yaml lacks %q:\n%s", want, yaml)
			}
		}
		kubectl(t, s, "", "label", "configmap", "settings", "team=blue")
		if out := kubectl(t, s, "", "get", "configmaps", "-l", "team=blue", "-o", "name"); strings.TrimSpace(out) != "configmap/settings" {
			t.Fatalf("label selector: %q", out)
		}
		kubectl(t, s, "", "delete", "configmap", "settings")
		if out, err := kubectlErr(t, s, "", "get", "configmap", "settings"); err == nil || !strings.Contains(out, "NotFound") && !strings.Contains(out, "not found") {
			t.Fatalf("get after delete: %v %s", err, out)
		}
	})

	t.Run("chunk-size", func(t *testing.T) {
		kubectl(t, s, "", "create", "namespace", "chunks")
		for i := range 5 {
			kubectl(t, s, "", "-n", "chunks", "create", "configmap", fmt.Sprintf("c%d", i))
		}
		out := kubectl(t, s, "", "-n", "chunks", "get", "configmaps", "--chunk-size=2", "-o", "name", "-v=6")
		var names, pages int
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "configmap/") {
				names++
			}
			if strings.Contains(line, "limit=2") && strings.Contains(line, "200 OK") {
				pages++
			}
		}
		// kube-root-ca.crt is not created by listwatch: exactly our five.
		if names != 5 || pages != 3 {
			t.Fatalf("chunked get: %d names over %d pages:\n%s", names, pages, out)
		}
	})

	t.Run("get -w sees a change", func(t *testing.T) {
		kubectl(t, s, "", "create", "configmap", "watched", "--from-literal=a=1")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlPath(t), "--kubeconfig", s.KubeconfigPath(), "get", "configmap", "watched", "-w", "-o", "jsonpath={.metadata.name}:{.data.a}{\"\\n\"}")
		cmd.Env = append(os.Environ(), "HOME="+filepath.Join(s.Dir, "home"))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		defer cancel()
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() || lines.Text() != "watched:1" {
			t.Fatalf("first line %q", lines.Text())
		}
		kubectl(t, s, "", "patch", "configmap", "watched", "--type=merge", "-p", `{"data":{"a":"2"}}`)
		if !lines.Scan() || lines.Text() != "watched:2" {
			t.Fatalf("change not seen: %q %v", lines.Text(), lines.Err())
		}
	})

	t.Run("custom resource", func(t *testing.T) {
		crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
		kubectl(t, s, crd, "apply", "-f", "-")
		kubectl(t, s, "", "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=30s")
		w := `apiVersion: example.com/v1
kind: Widget
metadata:
  name: gear
spec:
  teeth: 12
`
		if out := kubectl(t, s, w, "create", "-f", "-"); !strings.Contains(out, "widget.example.com/gear created") {
			t.Fatalf("create CR: %s", out)
		}
		out := kubectl(t, s, "", "get", "widgets")
		if !strings.Contains(out, "gear") {
			t.Fatalf("get widgets: %s", out)
		}
		if out := kubectl(t, s, "", "get", "wd", "gear", "-o", "jsonpath={.spec.teeth}"); out != "12" {
			t.Fatalf("short name get: %q", out)
		}
		kubectl(t, s, "", "delete", "crd", "widgets.example.com")
		if out, err := kubectlErr(t, s, "", "get", "widgets.example.com"); err == nil {
			t.Fatalf("widgets still served after CRD delete: %s", out)
		}
	})
}
