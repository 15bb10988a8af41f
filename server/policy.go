package server

import (
	"context"

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
	pluginReady
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
	return &policies{plugin: p, pluginReady: newPluginReady("validating admission policy", p)}, nil
}

// validate runs the policies over attrs: until they are loaded, a write
// waits (up to 10s) and is then refused, as kube's plugin answers.
func (p *policies) validate(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	if err := p.await(ctx, attrs); err != nil {
		return err
	}
	return p.plugin.Validate(ctx, attrs, o)
}
