package auth

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// awaitRBAC is an RBAC authorizer over cs, synced.
func awaitRBAC(t *testing.T, cs *fake.Clientset) *RBAC {
	t.Helper()
	r := NewRBAC(cs)
	runCtx, cancel := context.WithCancel(context.Background())
	r.Start(runCtx)
	t.Cleanup(func() { cancel(); r.Shutdown() })
	if !r.WaitForSync(t.Context()) {
		t.Fatal("not synced")
	}
	return r
}

// waitFor runs AwaitWrite for the RoleBinding ns/b in the background and
// returns its result's channel once it waits for an event.
func waitFor(t *testing.T, r *RBAC, rev int64, gone bool) <-chan bool {
	t.Helper()
	waiting := make(chan struct{})
	r.writes.onWait = func() { close(waiting) }
	done := make(chan bool, 1)
	go func() {
		done <- r.AwaitWrite(t.Context(), rbacv1.GroupName, "rolebindings", "ns", "b", rev, gone, time.Minute)
	}()
	select {
	case <-waiting:
	case ok := <-done:
		t.Fatalf("AwaitWrite returned %v without waiting", ok)
	}
	r.writes.onWait = nil // the waiter called it already
	return done
}

func binding(rv string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: rv},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}},
	}
}

// TestRBACAwaitWrite: a waiter for a create, an update and a delete is
// woken by the informer's event; one for a write already reflected
// returns at once.
func TestRBACAwaitWrite(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset()
	r := awaitRBAC(t, cs)
	rbs := cs.RbacV1().RoleBindings("ns")

	done := waitFor(t, r, 7, false)
	if _, err := rbs.Create(ctx, binding("7"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !<-done {
		t.Fatal("create: AwaitWrite gave up")
	}
	if _, ok, _ := r.indexers["rolebindings"].GetByKey("ns/b"); !ok {
		t.Fatal("AwaitWrite returned before the informer had the binding")
	}

	// Reflected already (rv 7 >= 5): no wait, even with no time left.
	r.writes.onWait = func() { t.Error("AwaitWrite waited for a write reflected already") }
	if !r.AwaitWrite(ctx, rbacv1.GroupName, "rolebindings", "ns", "b", 5, false, time.Nanosecond) {
		t.Error("AwaitWrite of a reflected write gave up")
	}
	r.writes.onWait = nil

	done = waitFor(t, r, 9, false)
	if _, err := rbs.Update(ctx, binding("8"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbs.Update(ctx, binding("9"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !<-done {
		t.Fatal("update: AwaitWrite gave up")
	}

	done = waitFor(t, r, 10, true)
	if err := rbs.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !<-done {
		t.Fatal("delete: AwaitWrite gave up")
	}
	if _, ok, _ := r.indexers["rolebindings"].GetByKey("ns/b"); ok {
		t.Fatal("AwaitWrite returned while the informer still had the binding")
	}
	if n := r.AwaitTimeouts(); n != 0 {
		t.Errorf("AwaitTimeouts %d, want 0", n)
	}
}

// TestRBACAwaitWriteTimeout: a write the informers never see is given up
// on at the timeout, and counted.
func TestRBACAwaitWriteTimeout(t *testing.T) {
	cs := fake.NewClientset(binding("3"))
	r := awaitRBAC(t, cs)
	if r.AwaitWrite(t.Context(), rbacv1.GroupName, "rolebindings", "ns", "b", 4, false, 20*time.Millisecond) {
		t.Error("AwaitWrite of a revision the informer never saw returned true")
	}
	if r.AwaitWrite(t.Context(), rbacv1.GroupName, "rolebindings", "ns", "b", 3, true, 20*time.Millisecond) {
		t.Error("AwaitWrite of a delete the informer never saw returned true")
	}
	if n := r.AwaitTimeouts(); n != 2 {
		t.Errorf("AwaitTimeouts %d, want 2", n)
	}
	// A newer object of the name: the delete at 2 is reflected.
	if !r.AwaitWrite(t.Context(), rbacv1.GroupName, "rolebindings", "ns", "b", 2, true, 20*time.Millisecond) {
		t.Error("AwaitWrite of a delete followed by a create gave up")
	}
}

// TestRBACAwaitWriteNoWait: before the informers have synced (the
// bootstrap policy is written before they start), and for anything but
// the four RBAC resources, AwaitWrite returns at once.
func TestRBACAwaitWriteNoWait(t *testing.T) {
	r := NewRBAC(fake.NewClientset()) // not started
	r.writes.onWait = func() { t.Error("AwaitWrite waited before the informers synced") }
	if !r.AwaitWrite(t.Context(), rbacv1.GroupName, "clusterroles", "", "admin", 5, false, time.Minute) {
		t.Error("AwaitWrite before sync gave up")
	}
	started := awaitRBAC(t, fake.NewClientset())
	started.writes.onWait = func() { t.Error("AwaitWrite waited for a write of something else") }
	for _, gr := range [][2]string{{"", "configmaps"}, {rbacv1.GroupName, "other"}} {
		if !started.AwaitWrite(t.Context(), gr[0], gr[1], "ns", "b", 5, false, time.Minute) {
			t.Errorf("AwaitWrite %v gave up", gr)
		}
	}
}
