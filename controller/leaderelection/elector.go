package leaderelection

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/internal/backoff"
	"github.com/listwatch/listwatch/wire"
)

// Elector is one candidate in a leader election over a Lease. Build it with
// New and call Run; an Elector runs one election at a time.
//
// Safety rests on local clocks, never on comparing clocks across machines:
// a follower takes the lease only after LeaseDuration has passed on its own
// clock since it last saw the lease record change.
type Elector struct {
	cfg Config

	// mu guards the fields below. Run's goroutine writes them; IsLeader
	// and Leader read them from anywhere.
	mu sync.Mutex
	// lease is the last lease read or written, the base of the next update.
	lease *Lease
	// observed is the spec of lease, and observedAt when (on our clock) it
	// last changed.
	observed   LeaseSpec
	observedAt time.Time
	// reportedLeader is the last identity passed to OnNewLeader.
	reportedLeader string
}

// New validates cfg, fills its defaults, and returns a candidate. It starts
// nothing.
func New(cfg Config) (*Elector, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	cfg.Logger = cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
	return &Elector{cfg: cfg}, nil
}

// Leader returns the holder of the lease as last observed ("" if none).
func (e *Elector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observed.HolderIdentity
}

// IsLeader reports whether this candidate held the lease when last
// observed. Leadership can lapse at any moment; code that must not run
// without it should use the context given to OnStartedLeading.
func (e *Elector) IsLeader() bool { return e.Leader() == e.cfg.Identity }

// Run campaigns for the lease until it is acquired or ctx ends, then runs
// cb.OnStartedLeading and keeps renewing the lease until ctx ends, a renewal
// fails for RenewDeadline, or OnStartedLeading returns. It then waits for
// OnStartedLeading to return, releases the lease if ReleaseOnCancel is set,
// and calls OnStoppedLeading. Run returns nil when ctx ended (or the
// leading work returned), ErrLeaseLost when renewal failed.
func (e *Elector) Run(ctx context.Context, cb Callbacks) error {
	if cb.OnStartedLeading == nil {
		return fmt.Errorf("%w: OnStartedLeading is nil", ErrInvalidConfig)
	}
	if !e.acquire(ctx, cb) {
		return nil
	}
	e.cfg.Logger.Info("became leader")
	leadCtx, stopLeading := context.WithCancel(ctx)
	defer stopLeading()
	workDone := make(chan struct{})
	go func() {
		defer close(workDone)
		cb.OnStartedLeading(leadCtx)
	}()

	lost := !e.renew(ctx, cb, workDone)
	stopLeading()
	<-workDone
	if e.cfg.ReleaseOnCancel && !lost {
		e.release(ctx)
	}
	if cb.OnStoppedLeading != nil {
		cb.OnStoppedLeading()
	}
	if lost {
		e.cfg.Logger.Error("lost the lease")
		return ErrLeaseLost
	}
	return nil
}

// acquire retries, every jittered RetryPeriod, until it holds the lease
// (true) or ctx ends (false).
func (e *Elector) acquire(ctx context.Context, cb Callbacks) bool {
	for {
		if e.tryAcquireOrRenew(ctx, cb) {
			return true
		}
		jitter := time.Duration(rand.Float64() * jitterFactor * float64(e.cfg.RetryPeriod))
		if !sleep(ctx, e.cfg.RetryPeriod+jitter) {
			return false
		}
	}
}

// renew renews the lease every RetryPeriod. It returns true when ctx ends
// or the leading work returns, false when a renewal kept failing for
// RenewDeadline.
func (e *Elector) renew(ctx context.Context, cb Callbacks, workDone <-chan struct{}) bool {
	for {
		select {
		case <-ctx.Done():
			return true
		case <-workDone:
			return true
		case <-time.After(e.cfg.RetryPeriod):
		}
		if !e.renewWithin(ctx, cb) {
			return ctx.Err() != nil // a renewal cut short by ctx is no loss
		}
	}
}

// renewWithin retries one renewal every RetryPeriod until it succeeds, or
// fails when RenewDeadline passes or another holder is seen.
func (e *Elector) renewWithin(ctx context.Context, cb Callbacks) bool {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	for {
		if e.tryAcquireOrRenew(ctx, cb) {
			return true
		}
		if holder := e.Leader(); holder != "" && holder != e.cfg.Identity {
			// Someone else holds it (we were paused past expiry, or the
			// lease was edited): stop now rather than at the deadline.
			return false
		}
		if !sleep(ctx, e.cfg.RetryPeriod) {
			return false
		}
	}
}

// sleep waits for d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool { return backoff.Sleep(ctx, d) == nil }

// tryAcquireOrRenew makes one attempt to take or keep the lease. On a
// Conflict (someone wrote the lease since we read it) it reads the lease
// again and decides afresh, once.
func (e *Elector) tryAcquireOrRenew(ctx context.Context, cb Callbacks) bool {
	for attempt := 0; attempt < 2; attempt++ {
		ok, err := e.attempt(ctx, cb)
		if err == nil || !client.IsConflict(err) {
			if err != nil {
				e.cfg.Logger.Info("lease attempt failed", "err", err)
			}
			return ok
		}
		e.cfg.Logger.Debug("lease changed under us, re-reading", "err", err)
	}
	return false
}

// attempt is one read-decide-write round.
func (e *Elector) attempt(ctx context.Context, cb Callbacks) (bool, error) {
	now := time.Now()
	lease, err := e.cfg.Client.Get(ctx, e.cfg.Name)
	if client.IsNotFound(err) {
		return e.create(ctx, cb, now)
	}
	if err != nil {
		return false, err
	}
	e.observe(lease, now, cb)
	if e.heldByOther(now) {
		return false, nil
	}
	next := *lease
	next.Spec = e.specFor(lease.Spec, now)
	updated, err := e.cfg.Client.Update(ctx, &next)
	if err != nil {
		return false, err
	}
	e.observe(updated, now, cb)
	return true, nil
}

func (e *Elector) create(ctx context.Context, cb Callbacks, now time.Time) (bool, error) {
	lease := &Lease{
		TypeMeta: wire.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		Metadata: wire.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Spec:     e.specFor(LeaseSpec{}, now),
	}
	created, err := e.cfg.Client.Create(ctx, lease)
	if err != nil {
		return false, err // AlreadyExists: another candidate won the race
	}
	e.observe(created, now, cb)
	return true, nil
}

// specFor is the spec this candidate writes to hold the lease at now.
func (e *Elector) specFor(old LeaseSpec, now time.Time) LeaseSpec {
	spec := LeaseSpec{
		HolderIdentity:       e.cfg.Identity,
		LeaseDurationSeconds: int32(e.cfg.LeaseDuration / time.Second),
		AcquireTime:          old.AcquireTime,
		RenewTime:            NewMicroTime(now),
		LeaseTransitions:     old.LeaseTransitions,
	}
	if old.HolderIdentity != e.cfg.Identity {
		spec.AcquireTime = NewMicroTime(now)
		if old.HolderIdentity != "" || !old.RenewTime.IsZero() {
			spec.LeaseTransitions++
		}
	}
	return spec
}

// observe records lease as the latest state, restarting the expiry clock
// if its spec changed, and reports a new leader.
func (e *Elector) observe(lease *Lease, now time.Time, cb Callbacks) {
	e.mu.Lock()
	changed := e.lease == nil || !lease.Spec.equal(e.observed)
	e.lease = lease
	if changed {
		e.observed, e.observedAt = lease.Spec, now
	}
	holder := lease.Spec.HolderIdentity
	report := holder != "" && holder != e.reportedLeader
	if report {
		e.reportedLeader = holder
	}
	e.mu.Unlock()
	if report {
		e.cfg.Logger.Info("new leader observed", "leader", holder)
		if cb.OnNewLeader != nil {
			cb.OnNewLeader(holder)
		}
	}
}

// heldByOther reports whether another candidate holds an unexpired lease.
func (e *Elector) heldByOther(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	holder := e.observed.HolderIdentity
	if holder == "" || holder == e.cfg.Identity {
		return false
	}
	d := time.Duration(e.observed.LeaseDurationSeconds) * time.Second
	if d <= 0 {
		d = e.cfg.LeaseDuration
	}
	return now.Before(e.observedAt.Add(d))
}

// release clears the lease, if this candidate still holds it, so that a
// follower takes it at its next attempt. It runs after ctx ended, so it
// gets its own RenewDeadline.
//
// It reads the lease again first rather than writing over the copy of the
// last renewal it saw complete: a renewal cut short by ctx may have been
// applied by the server all the same, and that copy's resourceVersion
// would then be stale. A conflict (another write in between) reads and
// decides again; other errors are retried every RetryPeriod until the
// deadline.
func (e *Elector) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RenewDeadline)
	defer cancel()
	for {
		released, err := e.releaseOnce(ctx)
		switch {
		case err == nil:
			if released {
				e.cfg.Logger.Info("released the lease")
			}
			return
		case client.IsConflict(err) && ctx.Err() == nil:
			e.cfg.Logger.Debug("lease changed under us while releasing, re-reading", "err", err)
			continue
		}
		if !sleep(ctx, e.cfg.RetryPeriod) {
			e.cfg.Logger.Error("releasing the lease failed; followers wait for it to expire", "err", err)
			return
		}
	}
}

// releaseOnce reads the lease and clears it if this candidate holds it. It
// reports whether it cleared it; (false, nil) means there was nothing of
// ours to release.
func (e *Elector) releaseOnce(ctx context.Context) (bool, error) {
	lease, err := e.cfg.Client.Get(ctx, e.cfg.Name)
	if client.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if lease.Spec.HolderIdentity != e.cfg.Identity {
		return false, nil
	}
	now := NewMicroTime(time.Now())
	next := *lease
	next.Spec = LeaseSpec{
		LeaseDurationSeconds: 1,
		AcquireTime:          now,
		RenewTime:            now,
		LeaseTransitions:     lease.Spec.LeaseTransitions,
	}
	updated, err := e.cfg.Client.Update(ctx, &next)
	if err != nil {
		return false, err
	}
	e.mu.Lock()
	e.lease, e.observed, e.observedAt = updated, updated.Spec, time.Now()
	e.mu.Unlock()
	return true, nil
}

// equal compares specs by instant, not by time.Time representation.
func (s LeaseSpec) equal(o LeaseSpec) bool {
	return s.HolderIdentity == o.HolderIdentity &&
		s.LeaseDurationSeconds == o.LeaseDurationSeconds &&
		s.AcquireTime.Equal(o.AcquireTime.Time) &&
		s.RenewTime.Equal(o.RenewTime.Time) &&
		s.LeaseTransitions == o.LeaseTransitions
}
