package server

import (
	"context"

	"k8s.io/apiserver/pkg/admission"
	policymutating "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/listwatch/listwatch/server/auth"
)

// MutatingAdmissionPolicies: kube's MutatingAdmissionPolicy plugin
// (k8s.io/apiserver), which applies the policies' CEL mutations
// (ApplyConfiguration or JSONPatch) to the requests their bindings
// select. As in kube-apiserver's plugin order (AllOrderedPlugins) it runs
// just before the mutating webhooks, in one chain with them, so that a
// change by either reinvokes the other (reinvocationPolicy IfNeeded).
//
// The plugin builds its type converters itself, as in kube-apiserver:
// from the OpenAPI v3 documents (components.schemas) of this server,
// which it reads over the loopback client and re-reads every 5 s, so a
// new CRD's kind can be mutated once its document is published there (a
// 503 "Resource kind ... not found" until then, as kube answers).

// mutatingPolicies is the plugin and what it needs once the server serves.
type mutatingPolicies struct {
	plugin *policymutating.Plugin
	pluginReady
}

func newMutatingPolicies(client kubernetes.Interface, dyn dynamic.Interface, authz auth.Authorizer, f informers.SharedInformerFactory) (*mutatingPolicies, error) {
	p, err := policymutating.NewPlugin(nil)
	if err != nil {
		return nil, err
	}
	p.SetExternalKubeClientSet(client)
	p.SetExternalKubeInformerFactory(f)
	p.SetDynamicClient(dyn)
	p.SetRESTMapper(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())))
	p.SetUnconditionalAuthorizer(auth.KubeAuthorizer{Authorizer: authz})
	// GA and on by default since kube 1.36.
	p.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	return &mutatingPolicies{plugin: p, pluginReady: newPluginReady("mutating admission policy", p)}, nil
}

// Handles is the plugin's: CREATE, UPDATE and CONNECT (nothing to mutate
// on DELETE).
func (p *mutatingPolicies) Handles(op admission.Operation) bool { return p.plugin.Handles(op) }

// Admit runs the policies over attrs: until they are loaded, a write
// waits (up to 10s) and is then refused, as kube's plugin answers.
func (p *mutatingPolicies) Admit(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	if err := p.await(ctx, attrs); err != nil {
		return err
	}
	return p.plugin.Admit(ctx, attrs, o)
}

var _ admission.MutationInterface = (*mutatingPolicies)(nil)

// mutationChain is kube's mutating admission chain: the policies, then
// the webhooks; the whole chain runs a second time when a reinvocable
// policy or webhook asked for it, as kube's admission chain does.
func (w *Webhooks) mutationChain(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	handlers := make([]admission.Interface, 0, 3)
	if w.builtin != nil {
		handlers = append(handlers, w.builtin.before)
	}
	if !w.idle() {
		handlers = append(handlers, w.mpolicies, w.mutating)
	}
	chain := admission.NewChainHandler(handlers...)
	if err := chain.Admit(ctx, attrs, o); err != nil {
		return err
	}
	if rc := attrs.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		return chain.Admit(ctx, attrs, o)
	}
	return nil
}
