package controllers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller/leaderelection"
	"github.com/listwatch/listwatch/informer"
)

// Lease names the Lease the replicas of a server elect their controller
// host with: kube-controller-manager's.
const (
	LeaseNamespace = "kube-system"
	LeaseName      = "kube-controller-manager"
)

// Config configures a Host. Client is required.
type Config struct {
	// Client talks to the server the controllers run in, as an identity
	// allowed everything (the server's admin).
	Client *client.Client
	// RootCA is the PEM bundle clients verify the server with, published
	// as ca.crt of every kube-root-ca.crt ConfigMap.
	RootCA []byte
	// Controllers is kube-controller-manager's --controllers list (see
	// Enabled). Nil means {"*"}; empty (not nil) means none.
	Controllers []string
	// Identity is this replica's name in the leader election. Default:
	// hostname_random, as kube-controller-manager makes it.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the leader
	// election; defaults kube-controller-manager's (15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// FinalizerWait is how long the namespace controller waits before it
	// looks again at content that finalizers hold (kube: half its 15s
	// estimate, plus one). Zero: that.
	FinalizerWait time.Duration
	// Registerer receives the controllers' and informers' metrics; nil
	// records none.
	Registerer prometheus.Registerer
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Host runs the enabled controllers while its replica leads.
type Host struct {
	cfg     Config
	enabled []string
	log     *slog.Logger
	elector *leaderelection.Elector // nil when no controller is enabled
	metrics informer.MetricsProvider
}

// New checks cfg and builds the host; it starts nothing.
func New(cfg Config) (*Host, error) {
	if cfg.Client == nil {
		return nil, errors.New("controllers: Config.Client is required")
	}
	list := cfg.Controllers
	if list == nil {
		list = []string{"*"}
	}
	enabled, err := Enabled(list)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Identity == "" {
		cfg.Identity = defaultIdentity()
	}
	if cfg.FinalizerWait == 0 {
		cfg.FinalizerWait = time.Duration(finalizerEstimateSeconds/2+1) * time.Second
	}
	h := &Host{cfg: cfg, enabled: enabled, log: cfg.Logger}
	if cfg.Registerer != nil {
		p, err := informer.NewPrometheusProvider(cfg.Registerer)
		if err != nil {
			return nil, fmt.Errorf("controllers: %w", err)
		}
		h.metrics = p
	}
	if len(enabled) == 0 {
		return h, nil
	}
	leases := client.NewResource[*leaderelection.Lease](cfg.Client, leaderelection.LeasesGVR).Namespace(LeaseNamespace)
	h.elector, err = leaderelection.New(leaderelection.Config{
		Client:          leaderelection.NewLeaseClient(leases),
		Namespace:       LeaseNamespace,
		Name:            LeaseName,
		Identity:        cfg.Identity,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Logger:          cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("controllers: %w", err)
	}
	return h, nil
}

// Controllers are the controllers this host runs when it leads.
func (h *Host) Controllers() []string { return h.enabled }

// IsLeader reports whether this replica runs the controllers now.
func (h *Host) IsLeader() bool { return h.elector != nil && h.elector.IsLeader() }

// Run campaigns for the lease until ctx ends, running the controllers
// while it leads and campaigning again when it loses the lease. It
// returns nil once ctx ended and every goroutine it started has ended.
// With no controller enabled it only waits for ctx.
func (h *Host) Run(ctx context.Context) error {
	if h.elector == nil {
		<-ctx.Done()
		return nil
	}
	for ctx.Err() == nil {
		err := h.elector.Run(ctx, leaderelection.Callbacks{
			OnStartedLeading: h.lead,
			OnNewLeader: func(id string) {
				h.log.Info("controller host leader", "leader", id, "self", id == h.cfg.Identity)
			},
		})
		if ctx.Err() != nil {
			break
		}
		h.log.Warn("no longer leading the controllers; campaigning again", "err", err)
		// Leadership ended on its own (lease lost, controllers failed):
		// pause before the next campaign rather than spin.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// lead runs one term: fresh informers and controllers until ctx ends
// (leadership over) or one of them fails.
func (h *Host) lead(ctx context.Context) {
	h.log.Info("starting controllers", "controllers", h.enabled)
	t := &term{host: h, c: h.cfg.Client}
	for _, name := range h.enabled {
		if err := starters[name](t); err != nil {
			h.log.Error("controller not started", "controller", name, "err", err)
		}
	}
	if err := t.g.Run(ctx); err != nil {
		h.log.Error("controllers stopped", "err", err)
	}
	h.log.Info("controllers stopped")
}

// starters add a controller's goroutines to a term.
var starters = map[string]func(*term) error{
	NamespaceController:      startNamespaceController,
	ServiceAccountController: startServiceAccountController,
	RootCAPublisher:          startRootCAPublisher,
	GarbageCollector:         startGarbageCollector,
	ClusterRoleAggregation:   startClusterRoleAggregation,
}

func defaultIdentity() string {
	host, _ := os.Hostname()
	var b [16]byte
	_, _ = rand.Read(b[:])
	return host + "_" + hex.EncodeToString(b[:])
}
