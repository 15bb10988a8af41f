package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/controller/leaderelection"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// TestKubeControllerMirrors runs a controller that keeps a copy of every
// ConfigMap of one namespace in another: creates, updates and deletes in
// the source must show in the mirror.
func TestKubeControllerMirrors(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	c := kubeClient(t, s.AdminConfig())
	src, dst := kubeNamespace(t, c), kubeNamespace(t, c)
	ctx := t.Context()
	srcCMs := client.NewResource[*object.Unstructured](c, configMapsGVR).Namespace(src)
	dstCMs := client.NewResource[*object.Unstructured](c, configMapsGVR).Namespace(dst)
	for i := range 3 {
		if _, err := srcCMs.Create(ctx, unstructuredCM(fmt.Sprintf("m-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	inf, err := informer.New[*object.Unstructured](srcCMs, informer.Options[*object.Unstructured]{})
	if err != nil {
		t.Fatal(err)
	}
	reconcile := controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		want, ok := inf.Lister().GetByKey(key)
		_, name, _ := cutKey(key)
		if !ok {
			if _, err := dstCMs.Delete(ctx, name, wire.DeleteOptions{}); err != nil && !client.IsNotFound(err) {
				return controller.Result{}, err
			}
			return controller.Result{}, nil
		}
		data, _ := want.Nested("data")
		have, err := dstCMs.Get(ctx, name)
		switch {
		case client.IsNotFound(err):
			cp := unstructuredCM(name)
			cp.SetNested(data, "data")
			_, err = dstCMs.Create(ctx, cp)
			return controller.Result{}, err
		case err != nil:
			return controller.Result{}, err
		}
		have.SetNested(data, "data")
		_, err = dstCMs.Update(ctx, have) // a Conflict retries the key
		return controller.Result{}, err
	})
	// The handler feeds the controller; the controller starts its workers
	// once the handler has seen the initial list.
	var ctl *controller.Controller
	enqueue := func(o *object.Unstructured) { ctl.Enqueue(object.Key(o)) }
	reg, err := inf.AddEventHandler(informer.HandlerFuncs[*object.Unstructured]{
		AddFunc:    func(o *object.Unstructured, _ bool) { enqueue(o) },
		UpdateFunc: func(_, o *object.Unstructured) { enqueue(o) },
		DeleteFunc: func(o *object.Unstructured, _ bool) { enqueue(o) },
	}, informer.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err = controller.New(reconcile, controller.Options{Name: "mirror", Workers: 2,
		HasSynced: []func() bool{reg.HasSynced},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller Run: %v", err)
		}
	})

	mirror := func() map[string]string {
		l, err := dstCMs.List(ctx, wire.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, it := range l.Items {
			v, _ := it.Nested("data", "k")
			out[it.GetName()], _ = v.(string)
		}
		return out
	}
	waitMirror := func(want map[string]string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := mirror()
			if maps.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("mirror %v, want %v", got, want)
			}
			time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
		}
	}
	waitMirror(map[string]string{"m-0": "m-0", "m-1": "m-1", "m-2": "m-2"})
	if _, err := srcCMs.Patch(ctx, "m-1", client.MergePatch, []byte(`{"data":{"k":"v2"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := srcCMs.Delete(ctx, "m-2", wire.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := srcCMs.Create(ctx, unstructuredCM("m-3")); err != nil {
		t.Fatal(err)
	}
	waitMirror(map[string]string{"m-0": "m-0", "m-1": "v2", "m-3": "m-3"})
}

func cutKey(key string) (ns, name string, ok bool) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// TestKubeLeaderElectionTakeover: two electors on one kube Lease; exactly
// one leads and renews; when it stops (with and without releasing), the
// other takes over and the lease records the transition.
func TestKubeLeaderElectionTakeover(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	c := kubeClient(t, s.AdminConfig())
	leases := leasesOf(c)
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("ReleaseOnCancel=%v", release), func(t *testing.T) {
			name := fmt.Sprintf("kube-takeover-%v-%d", release, time.Now().UnixNano())
			lc := &leaderCount{t: t}
			a := startCandidate(t, leaderelection.NewLeaseClient(leases), name, "a", release, lc)
			b := startCandidate(t, leaderelection.NewLeaseClient(leases), name, "b", release, lc)
			leader, follower, _ := firstLeader(t, a, b)
			waitRenewals(t, leases, name, leader.id, 2)
			if !leader.e.IsLeader() || follower.e.IsLeader() || follower.e.Leader() != leader.id {
				t.Fatalf("leader %v/%q, follower %v/%q", leader.e.IsLeader(), leader.e.Leader(), follower.e.IsLeader(), follower.e.Leader())
			}
			before, err := leases.Get(t.Context(), name)
			if err != nil {
				t.Fatal(err)
			}
			leader.stop(t)
			select {
			case <-follower.started:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not take over in 30s", follower.id)
			}
			now := waitRenewals(t, leases, name, follower.id, 1)
			if now.Spec.LeaseTransitions != before.Spec.LeaseTransitions+1 {
				t.Fatalf("transitions %d, want %d", now.Spec.LeaseTransitions, before.Spec.LeaseTransitions+1)
			}
		})
	}
}

// TestKubeLeaderElectionReleaseAfterUnseenRenewal: the release of a leader
// cancelled while a renewal's answer is held, against kube-apiserver.
func TestKubeLeaderElectionReleaseAfterUnseenRenewal(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	plain := kubeClient(t, s.AdminConfig())
	name := fmt.Sprintf("kube-unseen-renewal-%d", time.Now().UnixNano())
	releaseAfterUnseenRenewal(t, plain, name, s.AdminConfig)
}
