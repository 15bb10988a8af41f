package e2e

import (
	"strings"
	"testing"
)

// TestKubectlTyped: built-in kinds are typed and go through kube's
// strategies, as a kubectl user sees it against the real server.
func TestKubectlTyped(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")

	// YAML reads yes as a boolean: a ConfigMap's data holds strings only.
	out, err := kubectlErr(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\n  namespace: default\ndata:\n  enabled: yes\n", "create", "-f", "-")
	if err == nil || !strings.Contains(out, `cannot unmarshal bool into Go struct field ConfigMap.data of type string`) {
		t.Fatalf("boolean in data: %v %s", err, out)
	}
	// A pod without containers is kube's 422.
	out, err = kubectlErr(t, s, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: empty\n  namespace: default\nspec: {}\n", "create", "-f", "-")
	if err == nil || !strings.Contains(out, `spec.containers: Required value`) {
		t.Fatalf("pod without containers: %v %s", err, out)
	}
	// A valid pod starts Pending at generation 1, defaulted.
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
	kubectl(t, s, pod, "create", "-f", "-")
	if got := kubectl(t, s, "", "get", "pod", "p", "-o", "jsonpath={.status.phase}/{.metadata.generation}/{.spec.restartPolicy}/{.spec.containers[0].terminationMessagePath}"); got != "Pending/1/Always//dev/termination-log" {
		t.Fatalf("pod: %q", got)
	}
	// Namespaces carry their name as a label.
	kubectl(t, s, "", "create", "namespace", "typed")
	if got := kubectl(t, s, "", "get", "namespace", "typed", "-o", `jsonpath={.metadata.labels.kubernetes\.io/metadata\.name}`); got != "typed" {
		t.Fatalf("namespace label: %q", got)
	}
	// Immutable ConfigMaps stay as they are.
	kubectl(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  namespace: default\nimmutable: true\ndata:\n  a: \"1\"\n", "create", "-f", "-")
	out, err = kubectlErr(t, s, "", "patch", "configmap", "frozen", "--type=merge", "-p", `{"data":{"a":"2"}}`)
	if err == nil || !strings.Contains(out, "data: Forbidden: field is immutable when `immutable` is set") {
		t.Fatalf("immutable configmap: %v %s", err, out)
	}
	// Unknown fields: kubectl's default (strict) refuses them; warn keeps
	// the object without them.
	unknown := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\ncolour: red\n"
	out, err = kubectlErr(t, s, unknown, "create", "-f", "-")
	if err == nil || !strings.Contains(out, `unknown field "colour"`) {
		t.Fatalf("unknown field, strict: %v %s", err, out)
	}
	out = kubectl(t, s, unknown, "create", "--validate=warn", "-f", "-")
	if !strings.Contains(out, `unknown field "colour"`) {
		t.Fatalf("unknown field, warn: %s", out)
	}
	if got := kubectl(t, s, "", "get", "configmap", "extra", "-o", "json"); strings.Contains(got, "colour") {
		t.Fatalf("unknown field stored: %s", got)
	}
}
