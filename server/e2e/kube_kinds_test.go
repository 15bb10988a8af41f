package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestKubeKindsKubectlSameAsOurs runs the same kubectl session against a
// real kube-apiserver (no controller manager, as envtest) and against
// serve: creating the newly served kinds, valid and invalid, and getting
// them (wide tables, `get all`) prints the same, ages aside.
func TestKubeKindsKubectlSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	ns := kubeNamespace(t, kubeClient(t, ks.AdminConfig()))
	s := startServer(t, "")
	kubectl(t, s, "", "create", "namespace", ns)

	run := kubectlIn(t, ns)
	labels := "{app: web}"
	tmpl := "  selector:\n    matchLabels: " + labels + "\n  template:\n    metadata:\n      labels: " + labels +
		"\n    spec:\n      containers:\n      - {name: c, image: nginx}\n"
	pc, node, pv := ns+"-high", ns+"-node", ns+"-pv"
	for _, step := range append(groupKindSteps(t, ns), []kindStep{ // kube_kinds_groups_test.go
		{"", []string{"create", "deployment", "web", "--image=nginx", "--replicas=2"}},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bad\nspec:\n  selector:\n    matchLabels: {app: one}\n  template:\n    metadata:\n      labels: {app: two}\n    spec:\n      containers:\n      - {name: c, image: nginx}\n", []string{"create", "-f", "-"}},
		{"", []string{"get", "deployments", "-o", "wide"}},
		{"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: db\n" + tmpl, []string{"create", "-f", "-"}},
		{"apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n" + tmpl, []string{"create", "-f", "-"}},
		{"apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: rs\nspec:\n  replicas: 3\n" + tmpl, []string{"create", "-f", "-"}},
		{"apiVersion: apps/v1\nkind: ControllerRevision\nmetadata:\n  name: rev\nrevision: 3\ndata: {a: b}\n", []string{"create", "-f", "-"}},
		{"", []string{"get", "statefulsets,daemonsets,replicasets,controllerrevisions", "-o", "wide"}},
		{"", []string{"create", "job", "j", "--image=busybox"}},
		{"", []string{"create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *"}},
		{"", []string{"create", "cronjob", "badcj", "--image=busybox", "--schedule=never"}},
		{"", []string{"get", "jobs,cronjobs", "-o", "wide"}},
		{"", []string{"get", "all"}},
		{"", []string{"create", "role", "reader", "--verb=get,list", "--resource=pods"}},
		{"", []string{"create", "rolebinding", "rb", "--role=reader", "--user=alice", "--group=devs"}},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: bad\nrules:\n- resources: [pods]\n  apiGroups: ['']\n", []string{"create", "-f", "-"}},
		{"", []string{"get", "roles,rolebindings", "-o", "wide"}},
		{"", []string{"create", "priorityclass", pc, "--value=1000", "--description=high"}},
		{"", []string{"create", "priorityclass", ns + "-toohigh", "--value=2000000000"}},
		{"", []string{"get", "priorityclass", pc, "-o", "wide"}},
		{"", []string{"create", "pdb", "p", "--selector=app=web", "--min-available=1"}},
		{"", []string{"create", "pdb", "badp", "--selector=app=web", "--min-available=-1"}},
		{"", []string{"create", "quota", "q", "--hard=pods=10,cpu=2"}},
		{"", []string{"create", "quota", "badq", "--hard=pods=-1"}},
		{"", []string{"create", "ingress", "ing", "--rule=foo.com/bar=svc1:8080"}},
		{"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny\nspec:\n  podSelector: {}\n  policyTypes: [Ingress]\n", []string{"create", "-f", "-"}},
		{"apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: es\naddressType: IPv4\nendpoints:\n- addresses: [10.0.0.1]\nports:\n- {port: 80}\n", []string{"create", "-f", "-"}},
		{"apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: ep\nsubsets:\n- addresses: [{ip: 10.0.0.2}]\n  ports: [{port: 80}]\n", []string{"create", "-f", "-"}},
		{"apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: lr\nspec:\n  limits:\n  - type: Container\n    max: {cpu: '1'}\n", []string{"create", "-f", "-"}},
		{"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: pvc\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {storage: 1Gi}\n", []string{"create", "-f", "-"}},
		{"apiVersion: v1\nkind: PodTemplate\nmetadata:\n  name: pt\ntemplate:\n  metadata:\n    labels: " + labels + "\n  spec:\n    containers:\n    - {name: c, image: nginx}\n", []string{"create", "-f", "-"}},
		{"apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: rc\nspec:\n  replicas: 2\n  selector: " + labels + "\n  template:\n    metadata:\n      labels: " + labels + "\n    spec:\n      containers:\n      - {name: c, image: nginx}\n", []string{"create", "-f", "-"}},
		{"", []string{"get", "pdb,quota,ingress,networkpolicies,endpointslices,endpoints,limitranges,pvc,podtemplates,rc", "-o", "wide"}},
		{"apiVersion: v1\nkind: Node\nmetadata:\n  name: " + node + "\nspec:\n  unschedulable: true\n", []string{"create", "-f", "-"}},
		{"", []string{"get", "node", node, "-o", "wide"}},
		{"apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + pv + "\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  hostPath: {path: /tmp}\n", []string{"create", "-f", "-"}},
		{"apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + pv + "-bad\nspec:\n  capacity: {storage: 1Gi}\n", []string{"create", "-f", "-"}},
		{"", []string{"get", "pv", pv, "-o", "wide"}},
		{"", []string{"get", "all"}},
		// Services are printed by our own columns (no cluster IP is
		// allocated): only their key is compared.
		{"", []string{"create", "service", "clusterip", "svc1", "--tcp=80:8080"}},
	}...) {
		kube, ours := bothKubectl(run, ks.KubeconfigPath, s.KubeconfigPath(), step.stdin, step.args...)
		if step.args[0] == "create" && step.args[1] == "service" {
			continue
		}
		if kube != ours {
			t.Errorf("kubectl %s:\nkube:\n%s\nours:\n%s", strings.Join(step.args, " "), kube, ours)
		}
	}
	// Storage keys are kube's: /registry/deployments/NS/NAME, nodes as
	// minions, services under services/specs, endpoints under
	// services/endpoints, ingresses as ingress…
	keys := func(cli *clientv3.Client) []string {
		resp, err := cli.Get(t.Context(), "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			// Events are left out: serve's controllers may record one
			// about the Service (kube's side runs none) whenever they
			// get to it.
			if strings.HasPrefix(k, "/registry/events/") {
				continue
			}
			if strings.Contains(k, "/"+ns+"/") || strings.HasSuffix(k, "/"+ns) || strings.Contains(k, "/"+ns+"-") {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	kubeKeys, ourKeys := keys(ks.Etcd()), keys(s.Store().Client())
	// kube's service account controller is not running either; its
	// token controller is not: neither server has a default SA here.
	if !slices.Equal(kubeKeys, ourKeys) {
		t.Errorf("storage keys:\nkube: %q\nours: %q", kubeKeys, ourKeys)
	}
	for _, r := range [][]string{{"priorityclass", pc}, {"node", node}, {"pv", pv}} {
		run(ks.KubeconfigPath, "", append([]string{"delete", "--wait=false"}, r...)...)
	}
}

// kubectlIn returns a function that runs kubectl in namespace ns against
// the server of a kubeconfig, with a home of its own per kubeconfig (its
// discovery cache), and returns its output and errors normalized. It may
// run on any goroutine.
func kubectlIn(t *testing.T, ns string) func(kubeconfig, stdin string, args ...string) string {
	home, bin := t.TempDir(), kubectlPath(t)
	return func(kubeconfig, stdin string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+filepath.Join(home, filepath.Base(kubeconfig)))
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		out, _ := cmd.CombinedOutput()
		return normalizeKubectl(string(out))
	}
}

// bothKubectl runs the same kubectl command against two servers at
// once and returns their outputs.
func bothKubectl(run func(kubeconfig, stdin string, args ...string) string, kube, ours, stdin string, args ...string) (string, string) {
	done := make(chan string)
	go func() { done <- run(kube, stdin, args...) }()
	o := run(ours, stdin, args...)
	return <-done, o
}

var (
	// kubectl describe's times: "Sun, 06 Dec 2026 17:20:00 +0000".
	kubectlDescribeTime = regexp.MustCompile(`\b[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d [+-]\d{4}\b`)
	kubectlAge          = regexp.MustCompile(`^\d+(s|m\d*s?)$`)
	kubectlUID          = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	kubectlTS           = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$`) // kubectl writes its own (rollout restart's restartedAt) in local time
)

// normalizeKubectl collapses a table's padding and replaces ages, which
// differ between two servers by the time between the requests.
func normalizeKubectl(out string) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(kubectlDescribeTime.ReplaceAllString(line, "<time>"))
		for i, w := range f {
			switch {
			case kubectlAge.MatchString(w):
				f[i] = "<age>"
			case kubectlTS.MatchString(w):
				f[i] = "<time>"
			}
		}
		lines = append(lines, kubectlUID.ReplaceAllString(strings.Join(f, " "), "<uid>"))
	}
	return strings.Join(lines, "\n")
}
