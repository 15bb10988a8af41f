package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"regexp"
	"strings"
	"testing"
)

// TestKubeKubectlVerbsSameAsOurs runs the kubectl commands that change
// or describe objects beyond create and get (annotate, set, rollout,
// autoscale, cordon, taint, describe, diff, auth reconcile, apply
// --prune and its last-applied commands, replace --force, secrets, get's
// output and selection flags, tokens, wait, events, certificate
// approve and deny) against kube-apiserver v1.37.2 and serve, neither running
// controllers, and requires the same output, ages, times and uids aside.
func TestKubeKubectlVerbsSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	ns := kubeNamespace(t, kubeClient(t, ks.AdminConfig()))
	s := startServer(t, "")
	kubectl(t, s, "", "create", "namespace", ns)
	run := kubectlIn(t, ns)
	node := ns + "-node"
	role := "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: rec\n  namespace: " + ns +
		"\nrules:\n- apiGroups: ['']\n  resources: [pods]\n  verbs: [get]\n"
	pruned := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + n + "\n  labels: {set: p}\ndata: {a: b}\n---\n")
		}
		return b.String()
	}
	for _, step := range []kindStep{
		{"", []string{"create", "deployment", "web", "--image=nginx", "--replicas=2"}},
		{"", []string{"annotate", "deployment", "web", "team=a"}},
		{"", []string{"annotate", "deployment", "web", "team=b"}},
		{"", []string{"annotate", "deployment", "web", "team=b", "--overwrite"}},
		{"", []string{"annotate", "deployment", "web", "team-"}},
		{"", []string{"label", "deployment", "web", "tier=front", "--dry-run=server", "-o", "jsonpath={.metadata.labels}"}},
		{"", []string{"set", "image", "deployment/web", "nginx=nginx:1.27"}},
		{"", []string{"set", "image", "deployment/web", "nope=nginx:1.27"}},
		{"", []string{"set", "env", "deployment/web", "MODE=fast"}},
		{"", []string{"set", "resources", "deployment", "web", "--limits=cpu=200m,memory=64Mi"}},
		{"", []string{"set", "resources", "deployment", "web", "--limits=cpu=lots"}},
		{"", []string{"set", "serviceaccount", "deployment", "web", "builder"}},
		{"", []string{"rollout", "pause", "deployment/web"}},
		{"", []string{"rollout", "pause", "deployment/web"}},
		{"", []string{"rollout", "resume", "deployment/web"}},
		{"", []string{"rollout", "history", "deployment/web"}},
		{"", []string{"rollout", "status", "deployment/web", "--watch=false"}},
		{"", []string{"rollout", "restart", "deployment/web"}},
		{"", []string{"rollout", "undo", "deployment/web"}},
		{"", []string{"get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers}{.spec.template.spec.serviceAccountName}{.spec.paused}"}},
		{"", []string{"describe", "deployment", "web"}},
		{"", []string{"autoscale", "deployment", "web", "--min=1", "--max=3", "--cpu-percent=50"}},
		{"", []string{"autoscale", "deployment", "web", "--min=4", "--max=3"}},
		{"", []string{"get", "hpa", "-o", "wide"}},
		{"", []string{"describe", "hpa", "web"}},
		{"apiVersion: v1\nkind: Node\nmetadata:\n  name: " + node + "\n  labels: {zone: a}\n", []string{"create", "-f", "-"}},
		{"", []string{"cordon", node}},
		{"", []string{"cordon", node}},
		{"", []string{"taint", "nodes", node, "dedicated=db:NoSchedule"}},
		{"", []string{"taint", "nodes", node, "dedicated=db:NoSchedule"}},
		{"", []string{"taint", "nodes", node, "dedicated=web:NoSchedule", "--overwrite"}},
		{"", []string{"taint", "nodes", node, "bad=x:Sometimes"}},
		{"", []string{"uncordon", node}},
		{"", []string{"taint", "nodes", node, "dedicated-"}},
		{"", []string{"describe", "node", node}},
		{"", []string{"run", "p", "--image=busybox", "--labels=app=p", "--env=A=1", "--", "sleep", "3600"}},
		{"", []string{"describe", "pod", "p"}},
		{"", []string{"create", "configmap", "cfg", "--from-literal=k=v"}},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata: {k: w, extra: more}\n", []string{"diff", "-f", "-"}},
		{"", []string{"describe", "configmap", "cfg"}},
		{"", []string{"describe", "namespace", ns}},
		{role, []string{"auth", "reconcile", "-f", "-"}},
		{role, []string{"auth", "reconcile", "-f", "-"}},
		{strings.Replace(role, "[get]", "[list]", 1), []string{"auth", "reconcile", "-f", "-", "--remove-extra-permissions"}},
		{"", []string{"get", "role", "rec", "-o", "jsonpath={.rules}"}},
		{pruned("p1", "p2"), []string{"apply", "-f", "-", "--prune", "-l", "set=p", "--prune-allowlist=core/v1/ConfigMap"}},
		{pruned("p1"), []string{"apply", "-f", "-", "--prune", "-l", "set=p", "--prune-allowlist=core/v1/ConfigMap"}},
		{"", []string{"get", "configmaps", "-l", "set=p"}},
		{"", []string{"apply", "view-last-applied", "configmap/p1"}},
		{"", []string{"apply", "set-last-applied", "-f", "-"}},
		{pruned("p1"), []string{"apply", "set-last-applied", "-f", "-"}},
		{"", []string{"get", "configmaps", "--sort-by=.metadata.name", "--show-labels", "-L", "set"}},
		{"", []string{"get", "configmaps", "--field-selector=metadata.name=p1", "-o", "custom-columns=NAME:.metadata.name,DATA:.data"}},
		{"", []string{"get", "configmaps", "--chunk-size=1", "-o", "go-template={{range .items}}{{.metadata.name}} {{end}}"}},
		{"", []string{"get", "configmaps", "--server-print=false"}},
		{"", []string{"get", "--raw", "/api/v1/namespaces/" + ns + "/configmaps/p1"}},
		{"", []string{"label", "configmaps", "--all", "--list"}},
		{"", []string{"create", "secret", "generic", "s", "--from-literal=u=me", "--type=kubernetes.io/basic-auth"}},
		{"", []string{"create", "secret", "generic", "s2", "--from-literal=x=y", "--type=kubernetes.io/basic-auth"}},
		{"", []string{"create", "secret", "docker-registry", "reg", "--docker-server=r.example.com", "--docker-username=u", "--docker-password=p"}},
		{"", []string{"describe", "secret", "reg"}},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata: {k: z}\n", []string{"replace", "--force", "-f", "-"}},
		{"", []string{"get", "configmap", "cfg", "-o", "jsonpath={.data}"}},
		{"", []string{"delete", "configmap", "p1", "--dry-run=server"}},
		{"", []string{"delete", "configmaps", "-l", "set=p", "--grace-period=0", "--force"}},
		{"", []string{"get", "configmaps", "-l", "set=p"}},
		{"", []string{"create", "serviceaccount", "robot"}},
		{"", []string{"create", "token", "robot", "--duration=1m"}},
		{"", []string{"create", "token", "nobody"}},
		{"", []string{"wait", "--for=jsonpath={.data.k}=z", "configmap/cfg", "--timeout=10s"}},
		{"", []string{"wait", "--for=jsonpath={.data.k}=q", "configmap/cfg", "--timeout=1s"}},
		{"", []string{"events", "--for=configmap/cfg"}},
		{csr(t, ns+"-a") + "---\n" + csr(t, ns+"-d"), []string{"create", "-f", "-"}},
		{"", []string{"certificate", "approve", ns + "-a"}},
		{"", []string{"certificate", "deny", ns + "-d"}},
		{"", []string{"certificate", "approve", ns + "-d"}},
		{"", []string{"certificate", "approve", ns + "-a"}},
		{"", []string{"get", "csr", ns + "-a", ns + "-d", "-o", "custom-columns=NAME:.metadata.name,CONDITIONS:.status.conditions[*].type,REASONS:.status.conditions[*].reason"}},
		{"", []string{"delete", "csr", ns + "-a", ns + "-d"}},
	} {
		kube, ours := bothKubectl(run, ks.KubeconfigPath, s.KubeconfigPath(), step.stdin, step.args...)
		if step.args[1] == "--raw" {
			// The same bytes, but for uid, times and resourceVersion.
			kube, ours = maskOrder([]byte(kube)), maskOrder([]byte(ours))
		}
		if step.args[0] == "diff" {
			for _, out := range []*string{&kube, &ours} {
				*out = diffTime.ReplaceAllString(diffFiles.ReplaceAllString(*out, "$1 <file>"), "<time>")
			}
		}
		if kube != ours {
			t.Errorf("kubectl %s:\nkube:\n%s\nours:\n%s", strings.Join(step.args, " "), kube, ours)
		}
	}
	run(ks.KubeconfigPath, "", "delete", "node", node, "--wait=false")
}

// diffFiles matches the header lines of kubectl diff's output, which
// name its temporary files.
var diffFiles = regexp.MustCompile(`(?m)^(diff -u -N|---|\+\+\+) .*$`)

// diffTime matches a time in the YAML kubectl diff compares.
var diffTime = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)

// csr is a CertificateSigningRequest named name, as YAML.
func csr(t *testing.T, name string) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	req := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	return "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: " + name +
		"\nspec:\n  request: " + req + "\n  signerName: example.com/signer\n  usages: [digital signature]\n"
}
