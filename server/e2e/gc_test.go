package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestKubectlCascade: serve's garbage collector does what kubectl's
// --cascade asks, as on a cluster with kube-controller-manager:
// background and foreground take the dependents, orphan leaves them
// without the reference.
func TestKubectlCascade(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", apiservertest.WithControllers)
	for _, cascade := range []string{"background", "foreground", "orphan"} {
		t.Run(cascade, func(t *testing.T) {
			owner := "owner-" + cascade
			kubectl(t, s, "", "create", "configmap", owner)
			uid := kubectl(t, s, "", "get", "configmap", owner, "-o", "jsonpath={.metadata.uid}")
			for i := range 3 {
				dep := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: dep-%s-%d
  namespace: default
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: %s
    uid: %s
    blockOwnerDeletion: true
`, cascade, i, owner, uid)
				kubectl(t, s, dep, "create", "-f", "-")
			}
			// kubectl waits for the owner to go, which with foreground
			// means its dependents went first.
			kubectl(t, s, "", "delete", "configmap", owner, "--cascade="+cascade, "--timeout=60s")
			deadline := time.Now().Add(60 * time.Second)
			for {
				out := kubectl(t, s, "", "get", "configmaps", "-o", "jsonpath={range .items[*]}{.metadata.name}={.metadata.ownerReferences[*].name};{end}")
				var deps []string
				for _, e := range strings.Split(out, ";") {
					if strings.HasPrefix(e, "dep-"+cascade+"-") {
						deps = append(deps, e)
					}
				}
				done := len(deps) == 0
				if cascade == "orphan" {
					done = len(deps) == 3 && !strings.Contains(strings.Join(deps, ";"), owner)
				}
				if done {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("dependents after --cascade=%s: %v", cascade, deps)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// TestKubectlScaleDeployment: kubectl scale works on the built-in
// workloads through their scale subresource, as on kube.
func TestKubectlScaleDeployment(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	kubectl(t, s, "", "create", "deployment", "web", "--image=nginx", "--replicas=2")
	if out := kubectl(t, s, "", "scale", "deployment", "web", "--replicas=4"); !strings.Contains(out, "deployment.apps/web scaled") {
		t.Fatalf("scale: %s", out)
	}
	if out := kubectl(t, s, "", "get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"); out != "4" {
		t.Fatalf("replicas after scale: %q", out)
	}
	if out, err := kubectlErr(t, s, "", "scale", "deployment", "web", "--current-replicas=2", "--replicas=1"); err == nil || !strings.Contains(out, "Expected replicas to be 2, was 4") {
		t.Fatalf("scale with a wrong --current-replicas: %v %s", err, out)
	}
}
