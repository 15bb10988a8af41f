package e2e

import (
	"strings"
	"testing"
)

// TestKubectlKinds: the workload, batch, RBAC, policy, scheduling and
// quota kinds, as a kubectl user sees them: kubectl's generators create
// them, kube's strategies default and validate them, kube's printers make
// the tables, and `kubectl get all` lists them as against kube.
func TestKubectlKinds(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")

	kubectl(t, s, "", "create", "deployment", "web", "--image=nginx")
	out := kubectl(t, s, "", "get", "deployments")
	if !hasRow(out, "NAME READY UP-TO-DATE AVAILABLE AGE") || !hasRow(out, "web 0/1 0 0") {
		t.Fatalf("kubectl get deployments:\n%s", out)
	}
	// Defaulted by kube's scheme; generation set by the strategy.
	if got := kubectl(t, s, "", "get", "deploy", "web", "-o", "jsonpath={.metadata.generation}/{.spec.strategy.type}/{.spec.progressDeadlineSeconds}/{.spec.template.spec.restartPolicy}"); got != "1/RollingUpdate/600/Always" {
		t.Fatalf("deployment defaults: %q", got)
	}
	// A selector that does not select the template is kube's 422.
	bad := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bad\n  namespace: default\nspec:\n  selector:\n    matchLabels: {app: one}\n  template:\n    metadata:\n      labels: {app: two}\n    spec:\n      containers:\n      - {name: c, image: nginx}\n"
	out, err := kubectlErr(t, s, bad, "create", "-f", "-")
	if err == nil || !strings.Contains(out, `The Deployment "bad" is invalid: spec.template.metadata.labels: Invalid value: {"app":"two"}: `+"`selector` does not match template `labels`") {
		t.Fatalf("deployment with a selector not matching: %v %s", err, out)
	}

	kubectl(t, s, "", "create", "job", "j", "--image=busybox")
	out = kubectl(t, s, "", "get", "jobs")
	if !hasRow(out, "NAME STATUS COMPLETIONS DURATION AGE") || !hasRow(out, "j Running 0/1") {
		t.Fatalf("kubectl get jobs:\n%s", out)
	}
	kubectl(t, s, "", "create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *")
	out, err = kubectlErr(t, s, "", "create", "cronjob", "badcj", "--image=busybox", "--schedule=never")
	if err == nil || !strings.Contains(out, `spec.schedule: Invalid value: "never"`) {
		t.Fatalf("cronjob with a bad schedule: %v %s", err, out)
	}

	// No controllers: the deployment gets no replica set, the job no pod,
	// as against envtest. kubectl get all shows what is stored.
	out = kubectl(t, s, "", "get", "all")
	for _, want := range []string{"deployment.apps/web", "job.batch/j", "cronjob.batch/cj"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kubectl get all lacks %s:\n%s", want, out)
		}
	}

	kubectl(t, s, "", "create", "role", "reader", "--verb=get,list", "--resource=pods")
	kubectl(t, s, "", "create", "rolebinding", "rb", "--role=reader", "--user=alice")
	kubectl(t, s, "", "create", "clusterrole", "cr", "--verb=get", "--resource=nodes")
	kubectl(t, s, "", "create", "clusterrolebinding", "crb", "--clusterrole=cr", "--group=devs")
	out = kubectl(t, s, "", "get", "rolebindings", "-o", "wide")
	if !strings.Contains(out, "ROLE") || !strings.Contains(out, "Role/reader") || !strings.Contains(out, "alice") {
		t.Fatalf("kubectl get rolebindings:\n%s", out)
	}
	badRole := "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: bad\n  namespace: default\nrules:\n- resources: [pods]\n  apiGroups: ['']\n"
	out, err = kubectlErr(t, s, badRole, "create", "-f", "-")
	if err == nil || !strings.Contains(out, `The Role "bad" is invalid: rules[0].verbs: Required value`) {
		t.Fatalf("role without verbs: %v %s", err, out)
	}

	kubectl(t, s, "", "create", "priorityclass", "high", "--value=1000")
	out = kubectl(t, s, "", "get", "pc")
	if !hasRow(out, "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY") || !hasRow(out, "high 1000 false") {
		t.Fatalf("kubectl get priorityclasses:\n%s", out)
	}
	kubectl(t, s, "", "create", "pdb", "p", "--selector=app=web", "--min-available=1")
	out = kubectl(t, s, "", "get", "pdb")
	if !hasRow(out, "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE") || !hasRow(out, "p 1 N/A 0") {
		t.Fatalf("kubectl get pdb:\n%s", out)
	}
	kubectl(t, s, "", "create", "quota", "q", "--hard=pods=10")
	out = kubectl(t, s, "", "get", "quota")
	if !hasRow(out, "NAME REQUEST LIMIT AGE") || !hasRow(out, "q") /* no quota controller fills status, as envtest */ {
		t.Fatalf("kubectl get quota:\n%s", out)
	}
	out, err = kubectlErr(t, s, "", "create", "quota", "badq", "--hard=pods=-1")
	if err == nil || !strings.Contains(out, "spec.hard[pods]: Invalid value: \"-1\"") {
		t.Fatalf("negative quota: %v %s", err, out)
	}
}

// hasRow reports whether a line of kubectl's table output starts with
// the words of want, whatever the padding between them.
func hasRow(out, want string) bool {
	w := strings.Fields(want)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(w) && strings.Join(f[:len(w)], " ") == strings.Join(w, " ") {
			return true
		}
	}
	return false
}
