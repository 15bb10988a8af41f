package server

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	controlplaneadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	podpriority "k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"

	"github.com/listwatch/listwatch/server/auth"
)

// kube-apiserver's built-in admission plugins: the ones it enables by
// default (LimitRanger, Priority, DefaultTolerationSeconds, PodSecurity,
// TaintNodesByCondition, DefaultStorageClass, StorageObjectInUseProtection,
// RuntimeClass, the certificate plugins, DefaultIngressClass, ResourceQuota,
// …), kube's own code, made and ordered by kube's own registry and
// initializers, fed by the informers the webhooks use. Left out are those
// this server does its own way (NamespaceLifecycle; PodTopologyLabels, in
// bindings.go; the webhooks and admission policies, webhook.go) and
// ServiceAccount, which envtest turns off too: with it, a pod in a
// namespace whose "default" ServiceAccount does not exist yet is refused.

// ownPlugins are kube's default plugins the server runs its own way,
// always: NamespaceLifecycle (namespace.go), PodTopologyLabels
// (bindings.go), the webhooks and admission policies (webhook.go).
var ownPlugins = []string{
	lifecycle.PluginName,
	podtopologylabels.PluginName,
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
}

// defaultOff are kube's default plugins the server leaves off unless
// enabled: ServiceAccount, off in envtest too (with it, a pod in a
// namespace whose "default" ServiceAccount does not exist yet is refused).
var defaultOff = []string{serviceaccount.PluginName}

// AdmissionPlugins chooses kube's built-in admission plugins as
// kube-apiserver's --enable-admission-plugins and
// --disable-admission-plugins do: the defaults (kube's, without
// ServiceAccount), with Enable added and Disable taken away, run in
// kube's order.
type AdmissionPlugins struct {
	Enable, Disable []string
}

// builtinPluginNames are the built-in admission plugins the server runs
// from kube's registry, in kube's order, split where kube's chain has the
// admission policies and webhooks: before are the plugins that run ahead
// of them, after (ResourceQuota) the one that runs last. A name kube does
// not know, or one of the server's own to disable, is an error.
func builtinPluginNames(choice AdmissionPlugins) (before, after []string, err error) {
	for _, name := range slices.Concat(choice.Enable, choice.Disable) {
		if !slices.Contains(kubeoptions.AllOrderedPlugins, name) {
			return nil, nil, fmt.Errorf("admission plugin %q is unknown", name)
		}
	}
	for _, name := range choice.Disable {
		if slices.Contains(ownPlugins, name) {
			return nil, nil, fmt.Errorf("admission plugin %q is part of this server and cannot be disabled", name)
		}
		if slices.Contains(choice.Enable, name) {
			return nil, nil, fmt.Errorf("admission plugin %q is both enabled and disabled", name)
		}
	}
	off := kubeoptions.DefaultOffAdmissionPlugins()
	for _, name := range kubeoptions.AllOrderedPlugins {
		on := !off.Has(name) && !slices.Contains(defaultOff, name)
		switch {
		case slices.Contains(ownPlugins, name):
		case !(on || slices.Contains(choice.Enable, name)) || slices.Contains(choice.Disable, name):
		case name == resourcequota.PluginName:
			after = append(after, name)
		default:
			before = append(before, name)
		}
	}
	return before, after, nil
}

// builtinAdmission is the chain of kube's built-in plugins.
type builtinAdmission struct {
	before interface { // a chain
		admission.MutationInterface
		admission.ValidationInterface
	}
	quota  admission.ValidationInterface
	quotas corelisters.ResourceQuotaLister
	// onDeleteOrConnect: a plugin that is not a default one handles
	// DELETE or CONNECT.
	onDeleteOrConnect bool
}

// newBuiltinAdmission makes kube's built-in plugins chosen (builtinPlugins).
func newBuiltinAdmission(client kubernetes.Interface, dyn dynamic.Interface, f informers.SharedInformerFactory, authz auth.Authorizer, stop <-chan struct{}, choice AdmissionPlugins) (*builtinAdmission, error) {
	beforeNames, afterNames, err := builtinPluginNames(choice)
	if err != nil {
		return nil, err
	}
	plugins, err := builtinPlugins(client, dyn, f, authz, stop, slices.Concat(beforeNames, afterNames))
	if err != nil {
		return nil, err
	}
	before := plugins[:len(beforeNames)]
	b := &builtinAdmission{
		before: admission.NewChainHandler(before...),
		quota:  admission.NewChainHandler(plugins[len(beforeNames):]...),
		quotas: f.Core().V1().ResourceQuotas().Lister(),
	}
	for i, p := range before {
		if beforeNames[i] != podpriority.PluginName && (p.Handles(admission.Delete) || p.Handles(admission.Connect)) {
			b.onDeleteOrConnect = true
		}
	}
	return b, nil
}

// builtinPlugins makes the named plugins from kube's registry with kube's
// initializers: client and dyn the server's loopback clients, f the
// informers they read (started with the webhooks'), authz the server's
// authorizer (the certificate plugins ask it); ResourceQuota's workers
// stop when stop is closed.
func builtinPlugins(client kubernetes.Interface, dyn dynamic.Interface, f informers.SharedInformerFactory, authz auth.Authorizer, stop <-chan struct{}, names []string) ([]admission.Interface, error) {
	quotaConfig, err := quotainstall.NewQuotaConfigurationForAdmission(f, nil)
	if err != nil {
		return nil, err
	}
	init := admission.PluginInitializers{
		genericadmissioninit.New(client, dyn, f, authorizer.AuthorizerFunc(auth.KubeAuthorizer{Authorizer: authz}.Authorize), utilfeature.DefaultFeatureGate,
			compatibility.DefaultBuildEffectiveVersion(), stop, nil),
		controlplaneadmission.NewPluginInitializer(quotaConfig, exclusion.Excluded()),
	}
	registry := admission.NewPlugins()
	kubeoptions.RegisterAllAdmissionPlugins(registry)
	var plugins []admission.Interface
	for _, name := range names {
		p, err := registry.InitPlugin(name, nil, init)
		if err != nil {
			return nil, fmt.Errorf("admission plugin %s: %w", name, err)
		}
		plugins = append(plugins, p)
	}
	return plugins, nil
}

// priorityClasses is the one resource a default plugin acts on when it is
// deleted: Priority refuses the deletion of a system PriorityClass.
var priorityClasses = schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}

// acts reports whether a built-in plugin may act on a write (operation
// op) of resource gr in namespace ns (custom: a custom resource): kube's
// plugins decide from the same attributes, and let everything else
// through unchanged, so the server skips building attributes for them
// (and, for deletes and custom resources, decoding the objects). Of the
// default plugins only Priority handles DELETE, and only acts on
// priorityclasses, and none CONNECT (TestBuiltinPluginsOnDelete holds
// this); with others enabled (onDeleteOrConnect), every DELETE and
// CONNECT goes to them. Custom resources are counted by ResourceQuota
// only (count/<resource>), the other plugins acting on built-in kinds.
// Until synced, the quotas are not known: the plugins are called, and
// wait for their informers.
func (b *builtinAdmission) acts(op admission.Operation, gr schema.GroupResource, custom bool, ns string, synced bool) bool {
	switch {
	case (op == admission.Delete || op == admission.Connect) && b.onDeleteOrConnect:
		return true
	case op == admission.Delete:
		return gr == priorityClasses
	case op == admission.Connect:
		return false
	case !custom:
		return true
	}
	return ns != "" && (!synced || b.hasQuota(ns))
}

// hasQuota reports whether namespace ns has a ResourceQuota (in the
// informer's store).
func (b *builtinAdmission) hasQuota(ns string) bool {
	qs, err := b.quotas.ResourceQuotas(ns).List(labels.Everything())
	return err != nil || len(qs) > 0
}

// validateQuota runs ResourceQuota over attrs when attrs' namespace has a
// ResourceQuota. kube's plugin queues every create of every namespace to
// its workers and, finding no quota, lets it through; the server asks the
// plugin's informer first, once it has synced (before, the plugin waits
// for it, as in kube).
func (b *builtinAdmission) validateQuota(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces, synced bool) error {
	ns := attrs.GetNamespace()
	if ns == "" {
		return nil // kube's plugin admits what is not namespaced
	}
	if synced && !b.hasQuota(ns) {
		return nil
	}
	return b.quota.Validate(ctx, attrs, o)
}
