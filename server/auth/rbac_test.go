package auth

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/listwatch/listwatch/server/request"
)

func TestValidateModes(t *testing.T) {
	for _, c := range []struct {
		modes  []string
		policy bool
		want   string // substring of the error; "" for none
	}{
		{[]string{"RBAC"}, false, ""},
		{[]string{"RBAC", "ABAC"}, true, ""},
		{[]string{"AlwaysAllow"}, false, ""},
		{[]string{"AlwaysDeny", "RBAC"}, false, ""},
		{nil, false, "at least one authorization-mode must be passed"},
		{[]string{"rbac"}, false, `authorization-mode "rbac" is not a valid mode`},
		{[]string{"Node", "RBAC"}, false, `authorization-mode "Node" is not supported by this server`},
		{[]string{"Webhook"}, false, `authorization-mode "Webhook" is not supported by this server`},
		{[]string{"ABAC"}, false, "authorization-mode ABAC's authorization policy file not passed"},
		{[]string{"RBAC"}, true, "cannot specify --authorization-policy-file without mode ABAC"},
		{[]string{"RBAC", "RBAC"}, false, `authorization-mode ["RBAC" "RBAC"] has mode specified more than once`},
	} {
		err := ValidateModes(c.modes, c.policy)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v (policy %v): %v", c.modes, c.policy, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v (policy %v): %v, want %q", c.modes, c.policy, err, c.want)
		}
	}
	if got := DefaultModes(true); strings.Join(got, ",") != "RBAC,ABAC" {
		t.Errorf("DefaultModes(policy): %v", got)
	}
	if got := DefaultModes(false); strings.Join(got, ",") != "RBAC" {
		t.Errorf("DefaultModes(): %v", got)
	}
}

var (
	bob    = &request.User{Name: "bob", Groups: []string{GroupAuthenticated}}
	master = &request.User{Name: "admin", Groups: []string{GroupMasters, GroupAuthenticated}}
	listCM = &request.Info{IsResourceRequest: true, Verb: "list", Resource: "configmaps", Namespace: "ns", APIVersion: "v1"}
	ssar   = &request.Info{IsResourceRequest: true, Verb: "create", APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", APIVersion: "v1"}
)

// rbacFor is an RBAC authorizer over objs, synced.
func rbacFor(t *testing.T, objs ...any) *RBAC {
	t.Helper()
	cs := fake.NewClientset()
	ctx := t.Context()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r := NewRBAC(cs)
	runCtx, cancel := context.WithCancel(context.Background())
	r.Start(runCtx)
	t.Cleanup(func() { cancel(); r.Shutdown() })
	if !r.WaitForSync(ctx) || !r.HasSynced() {
		t.Fatal("not synced")
	}
	return r
}

func TestChainModes(t *testing.T) {
	ctx := context.Background()
	policy := PolicyList{{Spec: PolicySpec{User: "bob", Namespace: "ns", Resource: "configmaps", APIGroup: "*"}}}
	r := rbacFor(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "dangling"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "missing"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}}},
	)
	getPod := &request.Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "ns", APIVersion: "v1"}
	for _, c := range []struct {
		modes  []string
		u      *request.User
		info   *request.Info
		want   Decision
		reason string
	}{
		{[]string{"RBAC"}, bob, listCM, DecisionAllow, `RBAC: allowed by RoleBinding "cm/ns" of Role "cm" to User "bob"`},
		{[]string{"RBAC"}, bob, getPod, DecisionNoOpinion, `rbac: RBAC: role.rbac.authorization.k8s.io "missing" not found`},
		{[]string{"RBAC"}, master, getPod, DecisionAllow, ""},
		// Under RBAC, self reviews come from system:basic-user, which
		// these objects lack.
		{[]string{"RBAC"}, bob, ssar, DecisionNoOpinion, ""},
		{[]string{"ABAC"}, bob, ssar, DecisionAllow, ""},
		{[]string{"ABAC"}, bob, getPod, DecisionNoOpinion, "abac: No policy matched."},
		{[]string{"ABAC"}, bob, listCM, DecisionAllow, ""},
		{[]string{"AlwaysDeny"}, bob, listCM, DecisionNoOpinion, "alwaysdeny: Everything is forbidden."},
		{[]string{"AlwaysDeny"}, master, listCM, DecisionAllow, ""},
		{[]string{"AlwaysDeny", "AlwaysAllow"}, bob, getPod, DecisionAllow, ""},
		{[]string{"AlwaysDeny", "ABAC"}, bob, getPod, DecisionNoOpinion, "alwaysdeny: Everything is forbidden.\nabac: No policy matched."},
	} {
		chain, err := NewChain(ChainConfig{Modes: c.modes, Policy: policy, RBAC: r})
		if err != nil {
			t.Fatal(err)
		}
		d, reason, err := chain.Authorize(ctx, c.u, c.info)
		if d != c.want || reason != c.reason || err != nil {
			t.Errorf("%v %s %s %s: %v %q %v, want %v %q", c.modes, c.u.Name, c.info.Verb, c.info.Resource, d, reason, err, c.want, c.reason)
		}
	}
	if _, err := NewChain(ChainConfig{Modes: []string{"ABAC"}}); err == nil {
		t.Error("ABAC without a policy: no error")
	}
	if _, err := NewChain(ChainConfig{Modes: []string{"RBAC"}}); err == nil {
		t.Error("RBAC without its authorizer: no error")
	}
}

// TestChainRules: SelfSubjectRulesReviews list the modes' rules, not the
// system:masters authorizer's (kube's has no rule resolver).
func TestChainRules(t *testing.T) {
	r := rbacFor(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"d"}, Verbs: []string{"get"}},
				{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "r"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "r"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: GroupAuthenticated}}},
	)
	chain, err := NewChain(ChainConfig{Modes: []string{"RBAC"}, RBAC: r})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []*request.User{bob, master} {
		res, nonRes, incomplete, err := KubeAuthorizer{Authorizer: chain}.RulesFor(context.Background(), UserToKube(u), "ns")
		if err != nil || incomplete || len(res) != 1 || len(nonRes) != 1 {
			t.Fatalf("%s: %v %v %v %v", u.Name, res, nonRes, incomplete, err)
		}
		if got := res[0].GetResourceNames(); len(got) != 1 || got[0] != "d" {
			t.Errorf("%s: resource names %v", u.Name, got)
		}
	}
}
