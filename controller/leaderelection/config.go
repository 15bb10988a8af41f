package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults, as client-go and kube-controller-manager use them.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// jitterFactor spreads the attempts of candidates that are not leading
	// over [RetryPeriod, 2.2×RetryPeriod), as client-go does.
	jitterFactor = 1.2
)

var (
	// ErrInvalidConfig is returned by New for an unusable Config.
	ErrInvalidConfig = errors.New("leaderelection: invalid config")
	// ErrLeaseLost is returned by Run when this candidate led and then
	// failed to renew the lease within RenewDeadline.
	ErrLeaseLost = errors.New("leaderelection: lease lost")
)

// Config describes one candidate.
type Config struct {
	// Client reads and writes the Leases of the election's namespace.
	Client LeaseClient
	// Namespace and Name identify the lease. Name is required; Namespace is
	// written into a lease this candidate creates.
	Namespace, Name string
	// Identity names this candidate (pod name, hostname+uuid); it must be
	// unique among the candidates. Required.
	Identity string
	// LeaseDuration is how long followers wait, after they last saw the
	// lease change, before taking it over. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying a renewal before
	// it gives up leading. Must be less than LeaseDuration. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the time between attempts. Default 2s; RenewDeadline
	// must exceed 1.2×RetryPeriod.
	RetryPeriod time.Duration
	// ReleaseOnCancel makes the leader clear the lease when Run's context
	// ends, so a follower takes over at its next attempt rather than
	// after LeaseDuration. Only safe if the leading work has stopped by
	// then, which Run guarantees by waiting for OnStartedLeading to return.
	ReleaseOnCancel bool
	// Logger receives the election's logs. Default slog.Default().
	Logger *slog.Logger
}

// Callbacks are the hooks Run calls.
type Callbacks struct {
	// OnStartedLeading runs, in its own goroutine, when this candidate
	// becomes leader. Its context ends when leadership ends; Run waits for
	// it to return. If it returns early, Run stops leading. Required.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading is called after OnStartedLeading returned, once
	// leadership is over. Optional; not called if this candidate never led.
	OnStoppedLeading func()
	// OnNewLeader is called, from Run's goroutine, whenever the observed
	// leader changes (including to this candidate). It must not block.
	// Optional.
	OnNewLeader func(identity string)
}

func (c *Config) setDefaults() error {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.Name == "":
		return fmt.Errorf("%w: lease Name is empty", ErrInvalidConfig)
	case c.Identity == "":
		return fmt.Errorf("%w: Identity is empty", ErrInvalidConfig)
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("%w: LeaseDuration %v must exceed RenewDeadline %v", ErrInvalidConfig, c.LeaseDuration, c.RenewDeadline)
	case float64(c.RenewDeadline) <= jitterFactor*float64(c.RetryPeriod):
		return fmt.Errorf("%w: RenewDeadline %v must exceed %.1f×RetryPeriod %v", ErrInvalidConfig, c.RenewDeadline, jitterFactor, c.RetryPeriod)
	case c.LeaseDuration < time.Second:
		return fmt.Errorf("%w: LeaseDuration %v is under a second", ErrInvalidConfig, c.LeaseDuration)
	}
	return nil
}
