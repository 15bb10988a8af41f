package apiserver_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

// TestControlPlaneObjects: as kube-apiserver, the server keeps in
// kube-system the extension-apiserver-authentication ConfigMap (its client
// CA), the legacy token tracking ConfigMap, and its identity Lease
// (apiserver-<hash of the hostname>).
func TestControlPlaneObjects(t *testing.T) {
	ctx := context.Background()
	srv := apiservertest.Start(t, "")
	cs := clientset(t, srv)
	// The loops start once the server is ready: poll for their objects
	// (30 s is a deadline, not a synchronisation).
	poll := func(what string, done func() (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			ok, err := done()
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return ok, err
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("extension-apiserver-authentication", func() (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got, want := strings.TrimSpace(cm.Data["client-ca-file"]), strings.TrimSpace(string(srv.Credentials().CAPEM)); got != want {
			t.Fatalf("client-ca-file %q, want the server's client CA %q", got, want)
		}
		return true, nil
	})
	poll("legacy token tracking", func() (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-apiserver-legacy-service-account-token-tracking", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if _, err := time.Parse(time.DateOnly, cm.Data["since"]); err != nil {
			t.Fatalf("since: %v", cm.Data)
		}
		return true, nil
	})
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	poll("identity lease", func() (bool, error) {
		leases, err := cs.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
		if err != nil || len(leases.Items) == 0 {
			return false, err
		}
		l := leases.Items[0]
		if len(leases.Items) != 1 || !strings.HasPrefix(l.Name, "apiserver-") || l.Labels["kubernetes.io/hostname"] != hostname ||
			l.Spec.HolderIdentity == nil || !strings.HasPrefix(*l.Spec.HolderIdentity, l.Name+"_") ||
			l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 3600 || l.Spec.RenewTime == nil ||
			l.Annotations["kubernetes.io/peer-advertise-address"] != strings.TrimPrefix(srv.URL(), "https://") {
			t.Fatalf("identity leases %+v", leases.Items)
		}
		return true, nil
	})
}
