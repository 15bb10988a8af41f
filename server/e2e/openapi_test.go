package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/wire"
)

// kubectlVersions are the kubectl binaries the OpenAPI tests run, by
// name: the packaged one (1.32) and the versioned ones of the Cloud SDK.
// One missing is skipped.
var kubectlVersions = []struct{ name, path string }{
	{"1.27", "/usr/lib/google-cloud-sdk/bin/kubectl.1.27"},
	{"1.28", "/usr/lib/google-cloud-sdk/bin/kubectl.1.28"},
	{"1.32", "/usr/bin/kubectl"},
	{"1.33", "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"},
}

// runKubectl runs the kubectl at bin with kubeconfig, in a HOME of its
// own (so that no discovery or OpenAPI cache is shared between runs).
func runKubectl(t *testing.T, bin, kubeconfig, home, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const openAPIGadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: Gadget is a thing with a color.
        properties:
          spec:
            type: object
            description: What the gadget should be.
            properties:
              color:
                type: string
                description: The color of the gadget.
              size:
                type: integer
                description: How big the gadget is.
`

// TestOpenAPIKubectlExplain: kubectl explain reads the built-in kinds'
// and a CRD's fields and descriptions from /openapi/v3 (the default since
// kubectl 1.27) and from /openapi/v2 (--output plaintext-openapiv2).
func TestOpenAPIKubectlExplain(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	kubectl(t, s, openAPIGadgetCRD, "create", "-f", "-")
	kubectl(t, s, "", "wait", "--for=condition=Established", "crd/gadgets.example.com")
	for _, k := range kubectlVersions {
		if k.name == "1.28" {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			if _, err := os.Stat(k.path); err != nil {
				t.Skip(err)
			}
			for _, format := range []string{"plaintext", "plaintext-openapiv2"} {
				home := t.TempDir()
				for _, c := range []struct {
					args []string
					want []string
				}{
					{[]string{"explain", "pods"}, []string{"Pod", "v1", "Pod is a collection of containers", "spec", "status"}},
					{[]string{"explain", "pods.spec.containers"}, []string{"containers", "image", "Container image name", "livenessProbe"}},
					{[]string{"explain", "deployments.spec.strategy"}, []string{"Deployment", "apps", "rollingUpdate", "Type of deployment"}},
					{[]string{"explain", "gadgets.spec"}, []string{"Gadget", "example.com", "What the gadget should be.", "color", "The color of the gadget.", "size", "How big the gadget is."}},
				} {
					out, err := runKubectl(t, k.path, s.KubeconfigPath(), home, "", append(c.args, "--output", format)...)
					if err != nil {
						t.Fatalf("%s %v: %v\n%s", format, c.args, err, out)
					}
					for _, w := range c.want {
						if !strings.Contains(out, w) {
							t.Errorf("%s %v lacks %q:\n%s", format, c.args, w, out)
						}
					}
				}
			}
		})
	}
}

// TestOpenAPIKubectlValidation: create -f and apply -f with kubectl's
// default validation (which reads /openapi/v3 or /openapi/v2 to decide
// how to validate) accept valid objects and refuse an unknown field.
func TestOpenAPIKubectlValidation(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	kubectl(t, s, openAPIGadgetCRD, "create", "-f", "-")
	kubectl(t, s, "", "wait", "--for=condition=Established", "crd/gadgets.example.com")
	for _, k := range kubectlVersions {
		t.Run(k.name, func(t *testing.T) {
			if _, err := os.Stat(k.path); err != nil {
				t.Skip(err)
			}
			home := t.TempDir()
			name := "v" + strings.ReplaceAll(k.name, ".", "-")
			dep := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n  namespace: default\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: c, image: nginx}\n"
			cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: default\ndata:\n  color: blue\n"
			gadget := "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: " + name + "\n  namespace: default\nspec:\n  color: red\n  size: 3\n"
			for _, c := range []struct {
				stdin, verb, want string
			}{
				{dep, "create", "deployment.apps/" + name + " created"},
				{cm, "create", "configmap/" + name + " created"},
				{strings.Replace(cm, "color: blue", "color: green", 1), "apply", "configmap/" + name + " configured"},
				{gadget, "create", "gadget.example.com/" + name + " created"},
				{strings.Replace(gadget, "size: 3", "size: 4", 1), "apply", "gadget.example.com/" + name + " configured"},
			} {
				out, err := runKubectl(t, k.path, s.KubeconfigPath(), home, c.stdin, c.verb, "-f", "-")
				if err != nil || !strings.Contains(out, c.want) {
					t.Fatalf("%s: %v\n%s", c.verb, err, out)
				}
			}
			bad := strings.Replace(dep, "name: "+name, "name: "+name+"-bad", 1)
			bad = strings.Replace(bad, "  selector:", "  bogus: 1\n  selector:", 1)
			out, err := runKubectl(t, k.path, s.KubeconfigPath(), home, bad, "create", "-f", "-")
			if err == nil || !strings.Contains(out, `unknown field "spec.bogus"`) {
				t.Fatalf("unknown field: %v\n%s", err, out)
			}
		})
	}
}

// TestOpenAPIAuthorization: /openapi/* are non-resource paths, authorized
// as any other: no credential is 401; under the default RBAC, kube's
// bootstrap system:discovery role lets every authenticated user read them
// (as on kube); with ABAC alone, a user no policy allows is 403 on the
// index and on a group-version's document, and an ABAC policy on the path
// prefix ("/openapi/*") lets a user read them.
func TestOpenAPIAuthorization(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "extra-tokens.csv")
	policy := filepath.Join(dir, "policy.jsonl")
	if err := os.WriteFile(tokens, []byte("bob-token,bob,1001\nreader-token,rita,1002\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"rita","nonResourcePath":"/openapi/*","readonly":true}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.TokenAuthFile = tokens
		o.AuthorizationPolicyFile = policy
	})
	c := httpsClient(t, s)
	paths := []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/apps/v1?hash=X"}
	for _, p := range paths {
		if code, _ := doStatus(t, c, "GET", s.URL()+p, "bob-token", nil); code != 200 && code != 301 {
			t.Errorf("%s as bob under RBAC (system:discovery): %d", p, code)
		}
	}
	s.Stop()
	s = startServer(t, filepath.Join(dir, "data"), func(o *apiserver.Options) {
		o.TokenAuthFile = tokens
		o.AuthorizationPolicyFile = policy
		o.AuthorizationModes = []string{"ABAC"}
	})
	for _, p := range paths {
		if code, st := doStatus(t, c, "GET", s.URL()+p, "", nil); code != 401 || st.Reason != wire.ReasonUnauthorized {
			t.Errorf("%s without credentials: %d %s", p, code, st.Reason)
		}
		code, st := doStatus(t, c, "GET", s.URL()+p, "bob-token", nil)
		if want := `forbidden: User "bob" cannot get path "` + strings.SplitN(p, "?", 2)[0] + `": abac: No policy matched.`; code != 403 || st.Message != want {
			t.Errorf("%s as bob: %d %q, want 403 %q", p, code, st.Message, want)
		}
		if code, _ := doStatus(t, c, "GET", s.URL()+p, "reader-token", nil); code != 200 && code != 301 {
			t.Errorf("%s as rita: %d", p, code)
		}
	}
}
