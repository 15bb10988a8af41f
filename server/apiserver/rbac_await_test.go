package apiserver_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestRBACWriteInEffectWhenAnswered: the answer to a write of an RBAC
// object comes once the authorizer sees it. A RoleBinding created, then
// at once used by its subject, lets the subject in every time; its
// delete, then at once the same request, is refused every time. (Without
// the wait, the authorizer's informers lag: a probe saw 403s for a few of
// 30 fresh bindings.) The escalation check of a binding sees a ClusterRole
// created just before.
func TestRBACWriteInEffectWhenAnswered(t *testing.T) {
	srv := apiservertest.Start(t, "")
	ctx := t.Context()
	admin := clientset(t, srv)
	const ns = "await"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(user string) kubernetes.Interface {
		creds := srv.Credentials()
		cs, err := kubernetes.NewForConfig(&rest.Config{
			Host: srv.URL(),
			TLSClientConfig: rest.TLSClientConfig{
				CAData: creds.CAPEM, CertData: creds.AdminCertPEM, KeyData: creds.AdminKeyPEM,
			},
			Impersonate: rest.ImpersonationConfig{UserName: user},
		})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	// view, edit and admin are aggregated by a controller this server
	// does not run: a role of the test's own.
	lister := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-lister"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, lister, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := range 30 {
		user := fmt.Sprintf("user-%d", i)
		cs := as(user)
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cm-lister"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Logf("%s, right after its binding was created: %v", user, err)
			failed++
		}
		if err := admin.RbacV1().RoleBindings(ns).Delete(ctx, user, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Logf("%s, right after its binding was deleted: %v, want 403", user, err)
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of 60 requests right after an RBAC write were not authorized as it said", failed)
	}

	// An escalation check reads the roles as written: bob may bind
	// (and holds) what a ClusterRole created just before grants.
	bob := as("bob")
	binder := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "bob-binder"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, binder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grant := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bob-binder"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bob-binder"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, grant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed = 0
	for i := range 30 {
		name := fmt.Sprintf("cm-reader-%d", i)
		cr := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
		}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "carol"}},
		}
		if _, err := bob.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Logf("bob binding %s right after it was created: %v", name, err)
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of 30 bindings of a ClusterRole just created were refused", failed)
	}
}
