package apiserver_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestRBACBootstrapWithoutClusterRoles: a server restarted on a data dir
// whose ClusterRoles are all gone, but whose other bootstrap objects are
// there, takes the fast path of a fresh data dir (each object's first Get
// assumed NotFound) and must still reconcile the objects that exist as
// kube does: the cluster-admin binding, stripped of its group, gets it
// back; the ClusterRoles are created again.
func TestRBACBootstrapWithoutClusterRoles(t *testing.T) {
	ctx := context.Background()
	srv := apiservertest.Start(t, "")
	cs := clientset(t, srv)
	crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := crb.Subjects
	crb.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.RbacV1().ClusterRoles().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	// The policy must be whole at the first try: a failed try would be
	// retried without the fast path.
	warnings := &warnLog{}
	srv = apiservertest.Start(t, srv.Dir, func(o *apiserver.Options) { o.Logger = slog.New(warnings) })
	if w := warnings.get(); len(w) > 0 {
		t.Errorf("warnings at start: %q", w)
	}
	cs = clientset(t, srv)
	crb, err = cs.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range want {
		if !slices.Contains(crb.Subjects, s) {
			t.Errorf("cluster-admin binding subjects %v, want %v among them", crb.Subjects, s)
		}
	}
	for _, name := range []string{"cluster-admin", "view", "system:controller:namespace-controller"} {
		if _, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("clusterrole %s: %v", name, err)
		}
	}
}

// warnLog is a slog.Handler that keeps the messages of warnings and
// errors, but for slow-operation traces, which a loaded machine causes.
type warnLog struct {
	mu   sync.Mutex
	msgs []string
}

func (h *warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *warnLog) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *warnLog) WithGroup(string) slog.Handler                { return h }

func (h *warnLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "slow operation" {
		return nil
	}
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	h.mu.Lock()
	h.msgs = append(h.msgs, msg)
	h.mu.Unlock()
	return nil
}

func (h *warnLog) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// clientset is a client-go client of srv as its admin.
func clientset(t *testing.T, srv *apiservertest.Server) kubernetes.Interface {
	t.Helper()
	creds := srv.Credentials()
	cs, err := kubernetes.NewForConfig(&rest.Config{
		Host: srv.URL(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: creds.CAPEM, CertData: creds.AdminCertPEM, KeyData: creds.AdminKeyPEM,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
