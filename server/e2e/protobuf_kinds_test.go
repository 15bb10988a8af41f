package e2e

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestProtobufKinds: client-go's typed clients, which speak protobuf,
// create, read, list and watch the apps, batch and RBAC kinds, and get
// kube's 422 for an invalid one.
func TestProtobufKinds(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	cs, ct := protoClient(t, s)
	ctx := t.Context()

	labels := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	deps := cs.AppsV1().Deployments("default")
	w, err := deps.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	d, err := deps.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Fatalf("created deployment: %+v", d)
	}
	ev := <-w.ResultChan()
	if ev.Type != watch.Added || ev.Object.(*appsv1.Deployment).UID != d.UID {
		t.Fatalf("watch event: %v %+v", ev.Type, ev.Object)
	}
	got, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.UID != d.UID || got.Spec.Template.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("get: %v %+v", err, got)
	}
	// The status subresource changes status only, as kube's status strategy.
	got.Status.Replicas, got.Spec.Paused = 3, true
	st, err := deps.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil || st.Status.Replicas != 3 || st.Spec.Paused {
		t.Fatalf("update status: %v %+v", err, st)
	}
	ev = <-w.ResultChan()
	if ev.Type != watch.Modified || ev.Object.(*appsv1.Deployment).Status.Replicas != 3 {
		t.Fatalf("watch event: %v %+v", ev.Type, ev.Object)
	}
	list, err := deps.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %+v", err, list)
	}
	_, err = deps.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "noselector"},
		Spec: appsv1.DeploymentSpec{Template: tmpl}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || err.Error() != `Deployment.apps "noselector" is invalid: `+
		`[spec.selector: Required value, spec.template.metadata.labels: Invalid value: {"app":"web"}: `+"`selector` does not match template `labels`]" {
		t.Fatalf("deployment without selector: %v", err)
	}

	j, err := cs.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}, metav1.CreateOptions{})
	if err != nil || j.Spec.Selector == nil || j.Spec.Template.Labels["batch.kubernetes.io/job-name"] != "j" || *j.Spec.BackoffLimit != 6 {
		t.Fatalf("job: %v %+v", err, j)
	}

	r, err := cs.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{})
	if err != nil || r.Rules[0].Resources[0] != "pods" {
		t.Fatalf("role: %v %+v", err, r)
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("cluster role binding to a Role: %v", err)
	}
	if ct.count(ctProto) == 0 || ct.count(ctProtoWatch) != 1 || len(ct.seen) != 2 {
		t.Fatalf("answers not all protobuf: %v", ct.seen)
	}
}
