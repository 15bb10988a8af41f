package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicybinding"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/listwatch/listwatch/server/storage"
)

// The strategies of the admission policies and their bindings: kube's,
// which authorize a policy's paramKind (the user must be allowed to get
// every object of that kind) and a binding's paramRef (get the object, or
// list them when it names none), refusing with a 422 whose cause is
// spec.paramKind or spec.paramRef Forbidden. kube builds them with its
// authorizer, a resolver of kinds to resources over its discovery, and a
// getter of the stored policies. Here strategies are package values
// shared by every server, so each validation builds kube's strategy with
// the request's server (serverFrom): its authorizer (ctxAuthorizer), its
// discovery (paramLookup.Resolve) and its storage (paramLookup's
// getters).

// paramStrategy is kind's strategy (built without an authorizer, which
// validates without the checks) whose validation is that of build's, made
// for the request's server.
type paramStrategy struct {
	kindStrategy
	build func(l paramLookup) kindStrategy
}

func (p paramStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return p.build(paramLookup{s: serverFrom(ctx)}).Validate(ctx, obj)
}

func (p paramStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return p.build(paramLookup{s: serverFrom(ctx)}).ValidateUpdate(ctx, obj, old)
}

// resetParamStrategy is a paramStrategy whose kind has a status
// (ValidatingAdmissionPolicy), which server-side apply leaves alone.
type resetParamStrategy struct{ paramStrategy }

func (p resetParamStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return p.kindStrategy.(rest.ResetFieldsStrategy).GetResetFields()
}

// policyStrategies are the four strategies, for kinds.go.
func policyStrategies() (vap *resetParamStrategy, vapb, map_, mapb *paramStrategy) {
	vap = &resetParamStrategy{paramStrategy{
		kindStrategy: validatingadmissionpolicy.NewStrategy(nil, nil),
		build: func(l paramLookup) kindStrategy {
			return validatingadmissionpolicy.NewStrategy(ctxAuthorizer{}, l)
		},
	}}
	vapb = &paramStrategy{
		kindStrategy: validatingadmissionpolicybinding.NewStrategy(nil, nil, nil),
		build: func(l paramLookup) kindStrategy {
			return validatingadmissionpolicybinding.NewStrategy(ctxAuthorizer{}, l, l)
		},
	}
	map_ = &paramStrategy{
		kindStrategy: mutatingadmissionpolicy.NewStrategy(nil, nil),
		build: func(l paramLookup) kindStrategy {
			return mutatingadmissionpolicy.NewStrategy(ctxAuthorizer{}, l)
		},
	}
	mapb = &paramStrategy{
		kindStrategy: mutatingadmissionpolicybinding.NewStrategy(nil, nil, nil),
		build: func(l paramLookup) kindStrategy {
			return mutatingadmissionpolicybinding.NewStrategy(ctxAuthorizer{}, l, l)
		},
	}
	return vap, vapb, map_, mapb
}

// paramLookup answers kube's strategies from one server: the resource of
// a kind, and the stored policies.
type paramLookup struct{ s *Server }

// Resolve is kube's discovery resolver of a kind to its resource, over
// this server's discovery document of the kind's group-version.
func (l paramLookup) Resolve(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	gv := gvk.GroupVersion()
	if l.s == nil {
		return schema.GroupVersionResource{}, errors.New("no server")
	}
	list, ok := l.s.resourceList(gvk.Group, gvk.Version)
	if !ok {
		return schema.GroupVersionResource{}, apierrors.NewNotFound(schema.GroupResource{}, "")
	}
	for _, r := range list.Resources {
		if r.Kind != gvk.Kind || strings.Contains(r.Name, "/") {
			continue
		}
		if r.Group != "" && r.Group != gvk.Group || r.Version != "" && r.Version != gvk.Version {
			continue
		}
		return gv.WithResource(r.Name), nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("no resource of kind %v", gvk)
}

// storedPolicy reads the policy name of plural (admissionregistration
// v1) from storage, as kube's policy getters read it from its store.
func (l paramLookup) storedPolicy(ctx context.Context, plural, name string) (runtime.Object, error) {
	gr := schema.GroupResource{Group: groupAdmission, Resource: plural}
	if l.s == nil {
		return nil, apierrors.NewNotFound(gr, name)
	}
	r, ok := l.s.reg.lookup(groupAdmission, "v1", plural)
	if !ok || r.typed() == nil {
		return nil, apierrors.NewNotFound(gr, name)
	}
	kv, err := l.s.store.Get(ctx, r.key("", name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(gr, name)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	d, err := decodeDoc(kv.Value)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	obj, err := r.typed().decodeStored(d)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return obj, nil
}

func (l paramLookup) GetValidatingAdmissionPolicy(ctx context.Context, name string) (*admissionregistration.ValidatingAdmissionPolicy, error) {
	obj, err := l.storedPolicy(ctx, "validatingadmissionpolicies", name)
	if err != nil {
		return nil, err
	}
	p, ok := obj.(*admissionregistration.ValidatingAdmissionPolicy)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("stored policy is a %T", obj))
	}
	return p, nil
}

func (l paramLookup) GetMutatingAdmissionPolicy(ctx context.Context, name string) (*admissionregistration.MutatingAdmissionPolicy, error) {
	obj, err := l.storedPolicy(ctx, "mutatingadmissionpolicies", name)
	if err != nil {
		return nil, err
	}
	p, ok := obj.(*admissionregistration.MutatingAdmissionPolicy)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("stored policy is a %T", obj))
	}
	return p, nil
}
