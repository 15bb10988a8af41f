package controllers_test

import (
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller/leaderelection"
	"github.com/listwatch/listwatch/server/controllers"
)

// eventually waits (a ticker, up to 10s) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// TestLeaderElection: of two hosts on one server exactly one runs the
// controllers, the one the Lease kube-system/kube-controller-manager
// names; when it stops, it releases the lease and the other takes over.
func TestLeaderElection(t *testing.T) {
	s, admin := bare(t)
	cfg := func(id string) controllers.Config {
		return controllers.Config{Identity: id, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond}
	}
	a, stopA := runHostStop(t, newClient(t, s, s.URL(), nil), cfg("replica-a"))
	b, stopB := runHostStop(t, newClient(t, s, s.URL(), nil), cfg("replica-b"))
	leases := client.NewResource[*leaderelection.Lease](admin, leaderelection.LeasesGVR).Namespace("kube-system")
	holder := func() string {
		l, err := leases.Get(t.Context(), "kube-controller-manager")
		if err != nil {
			return ""
		}
		return l.Spec.HolderIdentity
	}
	eventually(t, "a leader", func() bool { return a.IsLeader() || b.IsLeader() })
	leader, follower, stopLeader, followerID := a, b, stopA, "replica-b"
	if b.IsLeader() {
		leader, follower, stopLeader, followerID = b, a, stopB, "replica-a"
	}
	if follower.IsLeader() {
		t.Fatal("both replicas lead")
	}
	if h := holder(); h == followerID || h == "" {
		t.Fatalf("lease holder %q, want the leader", h)
	}
	stopLeader()
	if leader.IsLeader() {
		t.Fatal("a stopped host still leads")
	}
	eventually(t, "the follower to take over", follower.IsLeader)
	if h := holder(); h != followerID {
		t.Fatalf("lease holder %q after takeover, want %s", h, followerID)
	}
}

// TestEnabled: kube-controller-manager's --controllers rules.
func TestEnabled(t *testing.T) {
	all := controllers.Names()
	cases := []struct {
		list []string
		want []string
	}{
		{[]string{"*"}, all},
		{nil, nil},
		{[]string{}, nil},
		{[]string{"namespace"}, []string{controllers.NamespaceController}},
		{[]string{"*", "-garbagecollector"}, append(append([]string{}, all[:3]...), all[4:]...)},
		{[]string{"-namespace-controller", "*", "namespace"}, all[1:]},
		{[]string{"serviceaccount", "-serviceaccount"}, []string{controllers.ServiceAccountController}},
	}
	for _, c := range cases {
		got, err := controllers.Enabled(c.list)
		if err != nil || len(got) != len(c.want) {
			t.Errorf("Enabled(%q) = %v, %v; want %v", c.list, got, err, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("Enabled(%q) = %v; want %v", c.list, got, c.want)
			}
		}
	}
	if _, err := controllers.Enabled([]string{"*", "-nope"}); err == nil || err.Error() != `controllers: unknown controller: "nope" is not in the list of known controllers` {
		t.Errorf("unknown name: %v", err)
	}
}
