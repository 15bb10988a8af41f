package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// TestKubeAPIServicesSameAsOurs: kubectl get apiservices, the built-in
// (onstart) APIServices' objects and a CRD's APIService, through its
// life, side by side with a real kube-apiserver; client-go's typed
// aggregator client lists them.
func TestKubeAPIServicesSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	s := startServer(t, "")
	home := t.TempDir()
	run := func(kubeconfig, stdin string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlPath(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+filepath.Join(home, strings.ReplaceAll(kubeconfig, "/", "_")))
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	same := func(stdin string, args ...string) string {
		t.Helper()
		kube := normalizeKubectl(run(ks.KubeconfigPath, stdin, args...))
		ours := normalizeKubectl(run(s.KubeconfigPath(), stdin, args...))
		if kube != ours {
			t.Fatalf("kubectl %s:\nkube:\n%s\nours:\n%s", strings.Join(args, " "), kube, ours)
		}
		return ours
	}
	// Other tests share the kube-apiserver and may add CRDs: the
	// built-in ones are those labelled onstart.
	onstart := "kube-aggregator.kubernetes.io/automanaged=onstart"
	out := same("", "get", "apiservices", "-l", onstart)
	if !strings.HasPrefix(out, "NAME SERVICE AVAILABLE AGE\nv1. Local True <age>\n") || strings.Count(out, "\n") != 22 {
		t.Fatalf("kubectl get apiservices:\n%s", out)
	}
	same("", "get", "apiservices", "-l", onstart, "-o", "wide")
	same("", "get", "apiservices", "v1.apps", "v2.autoscaling", "-o", "jsonpath={.items[*].spec} {.items[*].metadata.labels} {.items[*].status.conditions[*].reason}")

	kubeCS, oursCS := aggregatorClient(t, ks.AdminConfig().Host, ks.AdminConfig().CAData, ks.AdminConfig().BearerToken, ""),
		aggregatorClient(t, "", nil, "", s.KubeconfigPath())
	list := func(c aggregator.Interface, sel string) []apiregv1.APIService {
		l, err := c.ApiregistrationV1().APIServices().List(t.Context(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			o := &l.Items[i]
			o.UID, o.ResourceVersion, o.CreationTimestamp, o.Generation = "", "", metav1.Time{}, 0
			for j := range o.ManagedFields {
				o.ManagedFields[j].Time = nil
			}
			for j := range o.Status.Conditions {
				o.Status.Conditions[j].LastTransitionTime = metav1.Time{}
			}
		}
		sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
		return l.Items
	}
	if k, o := list(kubeCS, onstart), list(oursCS, onstart); !reflect.DeepEqual(k, o) || len(o) != 22 {
		kb, _ := json.Marshal(k)
		ob, _ := json.Marshal(o)
		t.Fatalf("client-go list:\nkube %s\nours %s", kb, ob)
	}

	// A CRD's group-version: created, reset after an edit, re-created
	// after a delete, removed with the CRD.
	group := fmt.Sprintf("lw%d.example.com", time.Now().UnixNano()%1e9)
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets." + group +
		"\nspec:\n  group: " + group + "\n  scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget}\n" +
		"  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object}}\n"
	name := "v1." + group
	both := func(what string, cond func(kubeconfig string) bool) {
		t.Helper()
		for _, kc := range []string{ks.KubeconfigPath, s.KubeconfigPath()} {
			// The aggregator's controllers, kube's and serve's, act in
			// their own time on a loaded machine.
			deadline := time.Now().Add(60 * time.Second)
			for !cond(kc) {
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for %s in %s:\n%s", what, kc, run(kc, "", "get", "apiservice", name, "-o", "yaml"))
				}
				time.Sleep(20 * time.Millisecond) // polling a real condition
			}
		}
	}
	get := func(kc string) string {
		return run(kc, "", "get", "apiservice", name, "-o", "jsonpath={.spec.versionPriority}/{.metadata.uid}")
	}
	available := func(kc string) bool {
		return run(kc, "", "get", "apiservice", name, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`) == "True"
	}
	same(crd, "create", "-f", "-")
	// kube's autoregister controller creates the APIService without a
	// status, which its availability controller writes a moment later:
	// the AVAILABLE column and the conditions are compared once both
	// servers have it.
	both(name+" created and available", func(kc string) bool { return strings.HasPrefix(get(kc), "100/") && available(kc) })
	same("", "get", "apiservice", name)
	same("", "get", "apiservice", name, "-o", "jsonpath={.spec} {.metadata.labels} {.status.conditions[*].type} {.status.conditions[*].status} {.status.conditions[*].reason} {.status.conditions[*].message}")

	same("", "patch", "apiservice", name, "--type=merge", "-p", `{"spec":{"versionPriority":7}}`)
	both(name+" reset", func(kc string) bool { return strings.HasPrefix(get(kc), "100/") })

	uids := map[string]string{ks.KubeconfigPath: get(ks.KubeconfigPath), s.KubeconfigPath(): get(s.KubeconfigPath())}
	same("", "delete", "apiservice", name)
	both(name+" re-created", func(kc string) bool { g := get(kc); return strings.HasPrefix(g, "100/") && g != uids[kc] })

	same("", "delete", "crd", "gadgets."+group)
	both(name+" removed", func(kc string) bool {
		return strings.Contains(run(kc, "", "get", "apiservice", name), "NotFound")
	})
}

func aggregatorClient(t *testing.T, host string, ca []byte, token, kubeconfig string) aggregator.Interface {
	t.Helper()
	cfg := &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	if kubeconfig != "" {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			t.Fatal(err)
		}
	}
	c, err := aggregator.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
