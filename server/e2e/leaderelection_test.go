package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller/leaderelection"
	"github.com/listwatch/listwatch/wire"
)

// Short timings, in client-go's proportions: followers wait leaseDuration
// after the last change they saw; the leader gives up after renewDeadline.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1500 * time.Millisecond
	retryPeriod   = 200 * time.Millisecond
	// attemptGap is the longest a non-leader waits between attempts
	// (RetryPeriod plus up to 1.2×RetryPeriod of jitter).
	attemptGap = retryPeriod + retryPeriod*12/10
)

// waitReadyz waits until the server has finished bootstrapping (its
// default namespaces exist): Ready only means it is listening.
func waitReadyz(t *testing.T, c *client.Client) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := c.Do(t.Context(), http.MethodGet, "/readyz", nil, nil)
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// candidate is one elector running in the background.
type candidate struct {
	id      string
	e       *leaderelection.Elector
	cancel  context.CancelFunc
	done    chan error     // Run's result
	started chan time.Time // when OnStartedLeading began (at most once)
	stopped chan struct{}  // closed by OnStoppedLeading
}

// leaderCount checks, from inside the leaders' callbacks, that no two
// candidates lead at once.
type leaderCount struct {
	t *testing.T
	n atomic.Int32
}

func (lc *leaderCount) lead(ctx context.Context, id string) {
	if n := lc.n.Add(1); n != 1 {
		lc.t.Errorf("%s started leading while %d other candidate(s) lead", id, n-1)
	}
	<-ctx.Done()
	// Run waits for this return before it releases the lease, so the
	// count drops before any other candidate can take over.
	lc.n.Add(-1)
}

func startCandidate(t *testing.T, leases leaderelection.LeaseClient, name, id string, release bool, lc *leaderCount) *candidate {
	t.Helper()
	e, err := leaderelection.New(leaderelection.Config{
		Client: leases, Namespace: "default", Name: name, Identity: id,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: release,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{id: id, e: e, cancel: cancel, done: make(chan error, 1),
		started: make(chan time.Time, 1), stopped: make(chan struct{})}
	go func() {
		c.done <- e.Run(ctx, leaderelection.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				c.started <- time.Now()
				lc.lead(ctx, id)
			},
			OnStoppedLeading: func() { close(c.stopped) },
		})
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop cancels the candidate and waits for Run to return nil.
func (c *candidate) stop(t *testing.T) {
	t.Helper()
	c.cancel()
	select {
	case err, ok := <-c.done:
		if ok && err != nil {
			t.Errorf("%s: Run: %v", c.id, err)
		}
		if ok {
			close(c.done)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: Run did not return", c.id)
	}
}

// firstLeader waits for one of a and b to lead and returns (leader, follower).
func firstLeader(t *testing.T, a, b *candidate) (*candidate, *candidate, time.Time) {
	t.Helper()
	select {
	case at := <-a.started:
		return a, b, at
	case at := <-b.started:
		return b, a, at
	case <-time.After(30 * time.Second):
		t.Fatal("nobody became leader in 30s")
	}
	return nil, nil, time.Time{}
}

func leasesOf(c *client.Client) *client.Resource[*leaderelection.Lease] {
	return client.NewResource[*leaderelection.Lease](c, leaderelection.LeasesGVR).Namespace("default")
}

// waitRenewals waits until the lease's renewTime has advanced n times, all
// by holder: proof of a leader in steady state.
func waitRenewals(t *testing.T, leases *client.Resource[*leaderelection.Lease], name, holder string, n int) *leaderelection.Lease {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last time.Time
	var l *leaderelection.Lease
	for seen := 0; seen < n; {
		var err error
		l, err = leases.Get(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity != holder {
			t.Fatalf("lease held by %q, want %q", l.Spec.HolderIdentity, holder)
		}
		if rt := l.Spec.RenewTime.Time; rt.After(last) {
			if !last.IsZero() {
				seen++
			}
			last = rt
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease renewed %d times in 30s, want %d", seen, n)
		}
		time.Sleep(retryPeriod / 4) // polling a condition with a deadline
	}
	return l
}

func TestLeaderElectionTakeover(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := ourClient(t, s)
	waitReadyz(t, c)
	leases := leasesOf(c)
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("ReleaseOnCancel=%v", release), func(t *testing.T) {
			name := fmt.Sprintf("takeover-%v", release)
			lc := &leaderCount{t: t}
			a := startCandidate(t, leaderelection.NewLeaseClient(leases), name, "a", release, lc)
			b := startCandidate(t, leaderelection.NewLeaseClient(leases), name, "b", release, lc)
			leader, follower, _ := firstLeader(t, a, b)

			// Exactly one leads, renews, and the follower knows it.
			waitRenewals(t, leases, name, leader.id, 3)
			select {
			case <-follower.started:
				t.Fatalf("%s leads too", follower.id)
			default:
			}
			if !leader.e.IsLeader() || follower.e.IsLeader() || follower.e.Leader() != leader.id {
				t.Fatalf("leader %v/%q, follower %v/%q", leader.e.IsLeader(), leader.e.Leader(), follower.e.IsLeader(), follower.e.Leader())
			}

			leader.stop(t)
			stoppedAt := time.Now()
			select {
			case <-leader.stopped:
			default:
				t.Fatal("OnStoppedLeading not called before Run returned")
			}
			last, err := leases.Get(t.Context(), name)
			if err != nil {
				t.Fatal(err)
			}
			var tookOver time.Time
			select {
			case tookOver = <-follower.started:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not take over in 30s", follower.id)
			}
			if release {
				// The lease was cleared: the follower takes it at its next
				// attempt, without waiting for expiry.
				if last.Spec.HolderIdentity != "" {
					t.Fatalf("released lease still held by %q", last.Spec.HolderIdentity)
				}
				if d := tookOver.Sub(stoppedAt); d >= leaseDuration {
					t.Fatalf("takeover %v after release, want under LeaseDuration %v", d, leaseDuration)
				}
			} else {
				// Nobody released it: the follower must wait LeaseDuration after
				// the last renewal, and not much longer.
				if last.Spec.HolderIdentity != leader.id {
					t.Fatalf("lease held by %q after the leader stopped", last.Spec.HolderIdentity)
				}
				expiry := last.Spec.RenewTime.Add(leaseDuration)
				const clockSlack = 100 * time.Millisecond
				if tookOver.Before(expiry.Add(-clockSlack)) {
					t.Fatalf("took over %v before the lease expired", expiry.Sub(tookOver))
				}
				if late := tookOver.Sub(expiry); late > 2*attemptGap+time.Second {
					t.Fatalf("took over %v after expiry, want within ~2 attempts (%v)", late, 2*attemptGap)
				}
			}
			now, err := leases.Get(t.Context(), name)
			if err != nil {
				t.Fatal(err)
			}
			if now.Spec.HolderIdentity != follower.id || now.Spec.LeaseTransitions != last.Spec.LeaseTransitions+1 {
				t.Fatalf("after takeover: %+v (before: %+v)", now.Spec, last.Spec)
			}
			waitRenewals(t, leases, name, follower.id, 2)
		})
	}
}

// conflictingLeases is a LeaseClient whose next Update, once armed, is
// preceded by another writer's change to the same lease, so the elector's
// write carries a stale resourceVersion and the server answers 409.
type conflictingLeases struct {
	leaderelection.LeaseClient
	raw       *client.Resource[*leaderelection.Lease]
	armed     atomic.Bool
	bumps     atomic.Int32
	conflicts atomic.Int32
}

func (c *conflictingLeases) Update(ctx context.Context, l *leaderelection.Lease) (*leaderelection.Lease, error) {
	if c.armed.CompareAndSwap(true, false) {
		n := c.bumps.Add(1)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"example.com/bumped":"%d"}}}`, n)
		if _, err := c.raw.Patch(ctx, l.Metadata.Name, client.MergePatch, []byte(patch)); err != nil {
			return nil, err
		}
	}
	got, err := c.LeaseClient.Update(ctx, l)
	if wire.ReasonOf(err) == wire.ReasonConflict {
		c.conflicts.Add(1)
	}
	return got, err
}

func TestLeaderElectionConflict(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := ourClient(t, s)
	waitReadyz(t, c)
	leases := leasesOf(c)
	const name = "conflict"
	lc := &leaderCount{t: t}
	ca := &conflictingLeases{LeaseClient: leaderelection.NewLeaseClient(leases), raw: leases}
	a := startCandidate(t, ca, name, "a", true, lc)
	select {
	case <-a.started:
	case <-time.After(30 * time.Second):
		t.Fatal("a did not lead")
	}
	b := startCandidate(t, leaderelection.NewLeaseClient(leases), name, "b", true, lc)

	// Three times, another writer changes the lease between the leader's
	// read and its renewal. Each conflict is resolved by re-reading: the
	// leader keeps the lease and renews on.
	for i := 1; i <= 3; i++ {
		ca.armed.Store(true)
		deadline := time.Now().Add(30 * time.Second)
		for ca.conflicts.Load() < int32(i) {
			if time.Now().After(deadline) {
				t.Fatalf("no conflict %d in 30s (bumps %d)", i, ca.bumps.Load())
			}
			time.Sleep(retryPeriod / 4) // polling a condition with a deadline
		}
		l := waitRenewals(t, leases, name, "a", 1)
		if l.Metadata.Annotations["example.com/bumped"] != fmt.Sprint(i) {
			t.Fatalf("the other writer's change was lost: %v", l.Metadata.Annotations)
		}
	}
	select {
	case <-a.stopped:
		t.Fatal("a stopped leading after a conflict")
	case <-b.started:
		t.Fatal("b took over after a conflict")
	default:
	}
	if !a.e.IsLeader() {
		t.Fatal("a is not leader")
	}

	// A writer that takes the lease for itself is a real loss: the leader
	// stops at its next renewal (Run returns ErrLeaseLost), and b, seeing
	// an unexpired lease held by the intruder, waits for it to expire.
	// The leader renews meanwhile, so the intruder reads again on a
	// conflict, as any writer would.
	var intruded time.Time
	for {
		l, err := leases.Get(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		intruded = time.Now()
		l.Spec.HolderIdentity = "intruder"
		l.Spec.RenewTime = leaderelection.NewMicroTime(intruded)
		_, err = leases.Update(t.Context(), l)
		if err == nil {
			break
		}
		if !client.IsConflict(err) {
			t.Fatal(err)
		}
	}
	select {
	case err := <-a.done:
		close(a.done)
		if !errors.Is(err, leaderelection.ErrLeaseLost) {
			t.Fatalf("a: Run = %v, want ErrLeaseLost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a kept running after losing the lease")
	}
	select {
	case at := <-b.started:
		if at.Sub(intruded) < leaseDuration-retryPeriod {
			t.Fatalf("b took over %v after the intruder, before its lease expired", at.Sub(intruded))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b did not take over from the silent intruder")
	}
}

// heldRenewal is a client transport hook: once armed, it forwards the next
// lease PUT to the server (which applies it) and then holds the answer
// until the request's context ends, so the elector never learns that its
// renewal succeeded.
type heldRenewal struct {
	base  http.RoundTripper
	armed atomic.Bool
	held  chan struct{} // receives once a PUT is applied and held
}

func (h *heldRenewal) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut || !h.armed.CompareAndSwap(true, false) {
		return h.base.RoundTrip(req)
	}
	resp, err := h.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h.held <- struct{}{}
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// TestLeaderElectionReleaseAfterUnseenRenewal: the leader is cancelled
// while a renewal is in flight that the server applied but whose answer
// the leader never saw. Its release must still clear the lease (re-reading
// it rather than writing over a stale copy), so the follower takes over at
// its next attempt instead of waiting out LeaseDuration.
func TestLeaderElectionReleaseAfterUnseenRenewal(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	plain := ourClient(t, s)
	waitReadyz(t, plain)
	releaseAfterUnseenRenewal(t, plain, "unseen-renewal", func() *client.Config {
		cfg, err := client.LoadKubeconfig(s.KubeconfigPath(), "")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	})
}

// releaseAfterUnseenRenewal: the leader is cancelled while the answer to a
// renewal the server applied is held back; its release must still clear
// the Lease, and the follower take over at its next attempt. plain reads
// the Lease; config makes each candidate's client configuration.
func releaseAfterUnseenRenewal(t *testing.T, plain *client.Client, name string, config func() *client.Config) {
	leases := leasesOf(plain)
	lc := &leaderCount{t: t}
	hooks := map[string]*heldRenewal{}
	cands := map[string]*candidate{}
	for _, id := range []string{"a", "b"} {
		cfg := config()
		cfg.QPS = -1
		h := &heldRenewal{held: make(chan struct{}, 1)}
		cfg.WrapTransport = func(base http.RoundTripper) http.RoundTripper { h.base = base; return h }
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.CloseIdleConnections)
		hooks[id] = h
		cands[id] = startCandidate(t, leaderelection.NewLeaseClient(leasesOf(c)), name, id, true, lc)
	}
	leader, follower, _ := firstLeader(t, cands["a"], cands["b"])
	waitRenewals(t, leases, name, leader.id, 2)

	hooks[leader.id].armed.Store(true)
	select {
	case <-hooks[leader.id].held:
	case <-time.After(30 * time.Second):
		t.Fatal("no renewal in 30s")
	}
	applied, err := leases.Get(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if applied.Spec.HolderIdentity != leader.id {
		t.Fatalf("held renewal not applied: holder %q", applied.Spec.HolderIdentity)
	}
	leader.stop(t) // cancels Run while the renewal's answer is held

	released, err := leases.Get(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if released.Spec.HolderIdentity != "" {
		t.Fatalf("after the leader stopped the lease is still held by %q: release failed", released.Spec.HolderIdentity)
	}
	select {
	case <-follower.started:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not take over in 30s", follower.id)
	}
	took, err := leases.Get(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	// The follower acquired the lease soon after the release, not a
	// LeaseDuration after it, as it would treating the lease as held:
	// within one attempt plus a GET and a PUT, which a loaded machine
	// under the race detector may take most of a second over.
	if took.Spec.HolderIdentity != follower.id {
		t.Fatalf("lease held by %q, want %q", took.Spec.HolderIdentity, follower.id)
	}
	if gap := took.Spec.AcquireTime.Sub(released.Spec.RenewTime.Time); gap >= leaseDuration {
		t.Fatalf("follower acquired %v after the release, want within one attempt (%v), before LeaseDuration (%v)", gap, attemptGap, leaseDuration)
	}
}
