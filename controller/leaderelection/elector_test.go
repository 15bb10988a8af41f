package leaderelection

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const leaseName = "controller-lock"

// candidate is one elector running in the background of a test.
type candidate struct {
	id       string
	e        *Elector
	cancel   context.CancelFunc
	errc     chan error
	leading  atomic.Bool
	startedN atomic.Int32
	stopped  atomic.Bool
	mu       sync.Mutex
	leaders  []string // OnNewLeader calls
	ledAt    time.Time
}

// leaders counts candidates inside OnStartedLeading, across a test.
type election struct {
	t       *testing.T
	client  *memoryLeases
	leading atomic.Int32
}

func newElection(t *testing.T) *election {
	return &election{t: t, client: newMemoryLeases()}
}

func (el *election) start(id string, release bool) *candidate {
	el.t.Helper()
	e, err := New(Config{
		Client: el.client, Namespace: "kube-system", Name: leaseName,
		Identity: id, ReleaseOnCancel: release, Logger: quiet,
	})
	if err != nil {
		el.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{id: id, e: e, cancel: cancel, errc: make(chan error, 1)}
	go func() {
		c.errc <- e.Run(ctx, Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				if n := el.leading.Add(1); n > 1 {
					el.t.Errorf("%s started leading while %d others lead", id, n-1)
				}
				c.mu.Lock()
				c.ledAt = time.Now()
				c.mu.Unlock()
				c.startedN.Add(1)
				c.leading.Store(true)
				<-ctx.Done()
				c.leading.Store(false)
				el.leading.Add(-1)
			},
			OnStoppedLeading: func() { c.stopped.Store(true) },
			OnNewLeader: func(leader string) {
				c.mu.Lock()
				c.leaders = append(c.leaders, leader)
				c.mu.Unlock()
			},
		})
	}()
	el.t.Cleanup(func() { c.stop() })
	return c
}

// stop cancels the candidate and returns Run's error (once).
func (c *candidate) stop() error {
	c.cancel()
	select {
	case err := <-c.errc:
		c.errc <- err
		return err
	}
}

func (c *candidate) since() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ledAt
}

// waitLeader advances fake time until one of cs leads, and returns it.
func waitLeader(t *testing.T, limit time.Duration, cs ...*candidate) *candidate {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		synctest.Wait()
		for _, c := range cs {
			if c.leading.Load() {
				return c
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no leader within %v", limit)
	return nil
}

func TestOneLeaderThenFailoverAfterExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		el := newElection(t)
		a, b := el.start("a", false), el.start("b", false)
		leader := waitLeader(t, time.Minute, a, b)
		follower := a
		if leader == a {
			follower = b
		}
		// Renewals keep the same leader for a long time.
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if !leader.leading.Load() || follower.startedN.Load() != 0 {
			t.Fatalf("leadership moved without a failure")
		}
		if got := el.client.holder(leaseName); got != leader.id {
			t.Fatalf("lease holder = %q, want %q", got, leader.id)
		}
		lastRenew := el.leaseSpec(t).RenewTime.Time

		stoppedAt := time.Now()
		if err := leader.stop(); err != nil {
			t.Fatalf("leader Run = %v, want nil", err)
		}
		if !leader.stopped.Load() {
			t.Error("OnStoppedLeading not called")
		}
		waitLeader(t, time.Minute, follower)
		// The follower sees the last renewal at its next poll (at most one
		// jittered RetryPeriod later), waits LeaseDuration from then on its
		// own clock, and takes over at the poll after that.
		afterRenew := follower.since().Sub(lastRenew)
		maxPoll := time.Duration(jitterFactor*float64(DefaultRetryPeriod)) + DefaultRetryPeriod
		if max := DefaultLeaseDuration + 2*maxPoll; afterRenew > max {
			t.Errorf("takeover %v after the last renewal, want at most %v", afterRenew, max)
		}
		if afterRenew < DefaultLeaseDuration {
			t.Errorf("follower took over %v after the last renewal, before the lease expired", afterRenew)
		}
		if follower.since().Before(stoppedAt) {
			t.Error("follower took over before the leader stopped")
		}
		spec := el.leaseSpec(t)
		if spec.HolderIdentity != follower.id || spec.LeaseTransitions != 1 || spec.LeaseDurationSeconds != 15 {
			t.Errorf("lease after failover = %+v", spec)
		}
		follower.mu.Lock()
		defer follower.mu.Unlock()
		if len(follower.leaders) != 2 || follower.leaders[0] != leader.id || follower.leaders[1] != follower.id {
			t.Errorf("follower's OnNewLeader calls = %v, want [%s %s]", follower.leaders, leader.id, follower.id)
		}
	})
}

func (el *election) leaseSpec(t *testing.T) LeaseSpec {
	t.Helper()
	l, err := el.client.Get(context.Background(), leaseName)
	if err != nil {
		t.Fatal(err)
	}
	return l.Spec
}

func TestReleaseOnCancelHandsOverQuickly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		el := newElection(t)
		a := el.start("a", true)
		waitLeader(t, time.Minute, a)
		b := el.start("b", true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if b.startedN.Load() != 0 {
			t.Fatal("b leads while a holds the lease")
		}
		stoppedAt := time.Now()
		if err := a.stop(); err != nil {
			t.Fatal(err)
		}
		waitLeader(t, time.Minute, b)
		if took, max := b.since().Sub(stoppedAt), time.Duration(2.2*float64(DefaultRetryPeriod)); took > max {
			t.Errorf("takeover after release took %v, want at most %v", took, max)
		}
		if spec := el.leaseSpec(t); spec.HolderIdentity != "b" || spec.LeaseTransitions != 1 {
			t.Errorf("lease = %+v", spec)
		}
	})
}

func TestConflictOnUpdateIsRetriedAfterReRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		el := newElection(t)
		a := el.start("a", false)
		waitLeader(t, time.Minute, a)
		// Nine conflicts in a row: with a re-read after each, the renewal
		// gets through within RenewDeadline; retrying only every
		// RetryPeriod would take 16s and lose the lease.
		var before int
		el.client.set(func() { el.client.failUpdates, before = 9, el.client.updates })
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if !a.leading.Load() || a.startedN.Load() != 1 {
			t.Fatal("conflicts made the leader step down")
		}
		el.client.set(func() {
			if el.client.failUpdates != 0 || el.client.updates <= before {
				t.Errorf("conflicts not consumed (%d left) or no renewal after them", el.client.failUpdates)
			}
		})
	})
}

func TestLeaderStepsDownWhenRenewalsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		el := newElection(t)
		a := el.start("a", true)
		waitLeader(t, time.Minute, a)
		el.client.set(func() { el.client.failAll = true })
		brokeAt := time.Now()
		var err error
		select {
		case err = <-a.errc:
			a.errc <- err
		case <-time.After(time.Minute):
			t.Fatal("leader still running a minute after the store broke")
		}
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("Run = %v, want ErrLeaseLost", err)
		}
		// The last good renewal was at most RetryPeriod before the break;
		// the leader must stop before the lease it holds expires.
		if took := time.Since(brokeAt); took > DefaultRetryPeriod+DefaultRenewDeadline || took >= DefaultLeaseDuration {
			t.Errorf("stepped down %v after the store broke", took)
		}
		if a.leading.Load() || !a.stopped.Load() {
			t.Error("leading work not stopped or OnStoppedLeading not called")
		}
	})
}

func TestLeaderStepsDownWhenLeaseTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		el := newElection(t)
		a := el.start("a", true)
		waitLeader(t, time.Minute, a)
		// Another writer (an operator, or a candidate that saw the lease
		// expire while a was paused) takes the lease.
		l, err := el.client.Get(context.Background(), leaseName)
		if err != nil {
			t.Fatal(err)
		}
		l.Spec.HolderIdentity = "intruder"
		if _, err := el.client.Update(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		takenAt := time.Now()
		err = <-a.errc
		a.errc <- err
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("Run = %v, want ErrLeaseLost", err)
		}
		if took := time.Since(takenAt); took > DefaultRetryPeriod {
			t.Errorf("stepped down %v after the lease was taken, want within one RetryPeriod", took)
		}
		if got := el.client.holder(leaseName); got != "intruder" {
			t.Errorf("holder = %q: a released a lease it no longer held", got)
		}
	})
}

func TestCreateRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		el := newElection(t)
		cs := []*candidate{el.start("a", false), el.start("b", false), el.start("c", false)}
		waitLeader(t, time.Minute, cs...)
		time.Sleep(time.Minute)
		synctest.Wait()
		n := 0
		for _, c := range cs {
			n += int(c.startedN.Load())
		}
		if n != 1 {
			t.Fatalf("%d candidates led, want exactly 1", n)
		}
	})
}

func TestConfigValidation(t *testing.T) {
	c := newMemoryLeases()
	for name, cfg := range map[string]Config{
		"no client":     {Name: "l", Identity: "a"},
		"no name":       {Client: c, Identity: "a"},
		"no identity":   {Client: c, Name: "l"},
		"renew > lease": {Client: c, Name: "l", Identity: "a", LeaseDuration: 5 * time.Second, RenewDeadline: 6 * time.Second},
		"retry too big": {Client: c, Name: "l", Identity: "a", RetryPeriod: 9 * time.Second},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
	}
	e, err := New(Config{Client: c, Name: "l", Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background(), Callbacks{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Run without OnStartedLeading = %v", err)
	}
}
