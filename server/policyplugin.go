package server

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/admission"
)

// policyPlugin is what kube's Validating- and MutatingAdmissionPolicy
// plugins have in common for starting and syncing.
type policyPlugin interface {
	SetDrainedNotification(<-chan struct{})
	ValidateInitialization() error
	WaitForReady() bool
}

// pluginReady runs one policy plugin's start and sync, and holds the
// requests that come before it has synced.
type pluginReady struct {
	name   string // for errors: "validating admission policy"
	plugin policyPlugin
	ready  chan struct{} // closed once initialized and synced
}

func newPluginReady(name string, p policyPlugin) pluginReady {
	return pluginReady{name: name, plugin: p, ready: make(chan struct{})}
}

// start initializes the plugin (its informers and evaluation run until
// ctx ends) once the server serves.
func (p *pluginReady) start(ctx context.Context) error {
	p.plugin.SetDrainedNotification(ctx.Done())
	if err := p.plugin.ValidateInitialization(); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	return nil
}

// waitSynced waits for the plugin's sources; false if ctx ended first.
func (p *pluginReady) waitSynced(ctx context.Context) bool {
	for !p.plugin.WaitForReady() {
		if ctx.Err() != nil {
			return false
		}
	}
	close(p.ready)
	return true
}

// await holds a request until the plugin has synced: up to 10s, then it
// is refused, as kube's plugins answer.
func (p *pluginReady) await(ctx context.Context, attrs admission.Attributes) error {
	select {
	case <-p.ready:
		return nil
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	return admission.NewForbidden(attrs, fmt.Errorf("not yet ready to handle request"))
}
