package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
)

var gvrClusterRoles = client.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}

// clusterRoleAggregator is kube-controller-manager's
// clusterrole-aggregation controller: the rules of a ClusterRole with an
// aggregationRule are those of every other ClusterRole one of its
// selectors matches, in selector order, then by name, without
// duplicates. kube's controller writes them with server-side apply; this
// one with an update, as kube's did before apply (the result is the same
// rules).
type clusterRoleAggregator struct {
	roles informer.Lister[u]
	res   *client.Resource[u]
}

func startClusterRoleAggregation(t *term) error {
	inf, err := t.informer(gvrClusterRoles, "")
	if err != nil {
		return err
	}
	a := &clusterRoleAggregator{roles: inf.Lister(), res: t.resource(gvrClusterRoles)}
	var reg *informer.Registration[u]
	ctl, err := t.controller(ClusterRoleAggregation, a, 5, func() bool { return reg.HasSynced() })
	if err != nil {
		return err
	}
	// Any change may change what an aggregated role selects: every
	// aggregated role is looked at again, as kube's controller does.
	enqueue := func() {
		for _, r := range a.roles.List() {
			if _, ok := r.Nested("aggregationRule"); ok {
				ctl.Enqueue(r.GetName())
			}
		}
	}
	reg, err = inf.AddEventHandler(informer.HandlerFuncs[u]{
		AddFunc:    func(u, bool) { enqueue() },
		UpdateFunc: func(_, _ u) { enqueue() },
		DeleteFunc: func(u, bool) { enqueue() },
	}, informer.HandlerOptions{})
	return err
}

// clusterRole decodes a cached ClusterRole.
func clusterRole(obj u) (*rbacv1.ClusterRole, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var cr rbacv1.ClusterRole
	if err := json.Unmarshal(b, &cr); err != nil {
		return nil, err
	}
	return &cr, nil
}

// Reconcile sets the rules of the aggregated ClusterRole key.
func (a *clusterRoleAggregator) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	obj, ok := a.roles.Get("", key)
	if !ok {
		return controller.Result{}, nil
	}
	shared, err := clusterRole(obj)
	if err != nil || shared.AggregationRule == nil {
		return controller.Result{}, nil
	}
	all := make([]*rbacv1.ClusterRole, 0)
	for _, o := range a.roles.List() {
		cr, err := clusterRole(o)
		if err != nil {
			continue
		}
		all = append(all, cr)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	var rules []rbacv1.PolicyRule
	for i := range shared.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&shared.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			// Invalid selectors are refused by validation; nothing to do.
			return controller.Result{}, nil
		}
		for _, cr := range all {
			if cr.Name == shared.Name || !sel.Matches(labels.Set(cr.Labels)) {
				continue
			}
			for _, r := range cr.Rules {
				if !ruleExists(rules, r) {
					rules = append(rules, r)
				}
			}
		}
	}
	if equality.Semantic.DeepEqual(rules, shared.Rules) {
		return controller.Result{}, nil
	}
	b, err := json.Marshal(rules)
	if err != nil {
		return controller.Result{}, err
	}
	var raw []any
	if err := json.Unmarshal(b, &raw); err != nil {
		return controller.Result{}, err
	}
	if raw == nil {
		raw = []any{}
	}
	upd := obj.DeepCopy()
	upd.SetNested(raw, "rules")
	_, err = a.res.Update(ctx, upd)
	if client.IsNotFound(err) || client.IsConflict(err) {
		// Deleted or changed meanwhile: its event brings the key back.
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("clusterrole %s: %w", key, err)
	}
	return controller.Result{}, nil
}

func ruleExists(haystack []rbacv1.PolicyRule, needle rbacv1.PolicyRule) bool {
	for _, curr := range haystack {
		if equality.Semantic.DeepEqual(curr, needle) {
			return true
		}
	}
	return false
}
