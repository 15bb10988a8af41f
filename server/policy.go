package server

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/admission"
	policyvalidating "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/listwatch/listwatch/server/auth"
)

// ValidatingAdmissionPolicies: kube's ValidatingAdmissionPolicy plugin
// (k8s.io/apiserver), which evaluates the policies' CEL validations for
// the requests their bindings select. As in kube it runs before the
// validating webhooks, over informers of the policies, bindings and their
// params.

// policies is the plugin and what it needs once the server serves.
type policies struct {
	plugin *policyvalidating.Plugin
	ready  chan struct{} // closed once initialized and synced
}

func newPolicies(client kubernetes.Interface, dyn dynamic.Interface, authz auth.Authorizer, w *Webhooks) (*policies, error) {
	p, err := policyvalidating.NewPlugin(nil)
	if err != nil {
		return nil, err
	}
	p.SetExternalKubeClientSet(client)
	p.SetExternalKubeInformerFactory(w.factory)
	p.SetDynamicClient(dyn)
	p.SetRESTMapper(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())))
	p.SetUnconditionalAuthorizer(auth.KubeAuthorizer{Authorizer: authz})
	return &policies{plugin: p, ready: make(chan struct{})}, nil
}

// start initializes the plugin (its informers and evaluation run until
// ctx ends) once the server serves, and waits for it to sync.
func (p *policies) start(ctx context.Context) error {
	p.plugin.SetDrainedNotification(ctx.Done())
	if err := p.plugin.ValidateInitialization(); err != nil {
		return fmt.Errorf("validating admission policy: %w", err)
	}
	return nil
}

// waitSynced waits for the plugin's sources; false if ctx ended first.
func (p *policies) waitSynced(ctx context.Context) bool {
	for !p.plugin.WaitForReady() {
		if ctx.Err() != nil {
			return false
		}
	}
	close(p.ready)
	return true
}

// validate runs the policies over attrs: until they are loaded, a write
// waits (up to 10s) and is then refused, as kube's plugin answers.
func (p *policies) validate(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	select {
	case <-p.ready:
	case <-time.After(10 * time.Second):
		return admission.NewForbidden(attrs, fmt.Errorf("not yet ready to handle request"))
	case <-ctx.Done():
		return admission.NewForbidden(attrs, fmt.Errorf("not yet ready to handle request"))
	}
	return p.plugin.Validate(ctx, attrs, o)
}
