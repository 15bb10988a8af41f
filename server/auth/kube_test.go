package auth

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	kubeabac "k8s.io/kubernetes/pkg/auth/authorizer/abac"

	"github.com/listwatch/listwatch/server/request"
)

const rulesPolicy = `{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"bob","namespace":"team-a","resource":"*","apiGroup":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"dev","namespace":"*","resource":"pods","apiGroup":"","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"*","nonResourcePath":"/api*","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"carol","namespace":"team-b","resource":"secrets","apiGroup":"","nonResourcePath":"/healthz"}}
{"user":"dave"}
`

func ruleStrings(res []authorizer.ResourceRuleInfo, nonRes []authorizer.NonResourceRuleInfo) []string {
	var out []string
	for _, r := range res {
		out = append(out, "res "+strings.Join(r.GetVerbs(), ",")+" "+strings.Join(r.GetAPIGroups(), ",")+" "+
			strings.Join(r.GetResources(), ",")+" "+strings.Join(r.GetResourceNames(), ","))
	}
	for _, r := range nonRes {
		out = append(out, "nonres "+strings.Join(r.GetVerbs(), ",")+" "+strings.Join(r.GetNonResourceURLs(), ","))
	}
	return out
}

// TestPolicyListRulesMatchKube: our ABAC policy lists the same rules for
// each user and namespace as kube's ABAC authorizer's RulesFor.
func TestPolicyListRulesMatchKube(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.jsonl")
	if err := os.WriteFile(path, []byte(rulesPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	kube, err := kubeabac.NewFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := ParsePolicyFile(strings.NewReader(rulesPolicy))
	if err != nil {
		t.Fatal(err)
	}
	users := []*request.User{
		{Name: "bob", Groups: []string{GroupAuthenticated}},
		{Name: "eve", Groups: []string{"dev", GroupAuthenticated}},
		{Name: "carol", Groups: []string{GroupAuthenticated}},
		{Name: "dave", Groups: []string{GroupAuthenticated}},
		{Name: "nobody"},
	}
	for _, u := range users {
		for _, ns := range []string{"", "team-a", "team-b", "other"} {
			kr, kn, kinc, kerr := kube.RulesFor(context.Background(), UserToKube(u), ns)
			or, on, oinc := Rules(ours, u, ns)
			if want, got := ruleStrings(kr, kn), ruleStrings(or, on); !slices.Equal(want, got) || kinc != oinc || kerr != nil {
				t.Errorf("%s in %q:\nkube %q %v\nours %q %v", u.Name, ns, want, kinc, got, oinc)
			}
		}
	}
}

// TestRulesOfTheChain: the server's chain lists everything for
// system:masters, the self reviews for every authenticated user, and the
// ABAC rules; an authorizer it cannot list makes the list incomplete.
func TestRulesOfTheChain(t *testing.T) {
	chain := KubeAuthorizer{NewAuthorizer(PolicyList{{Spec: PolicySpec{User: "bob", Namespace: "*", Resource: "pods", APIGroup: ""}}})}
	res, nonRes, inc, err := chain.RulesFor(context.Background(), &user.DefaultInfo{Name: "admin", Groups: []string{GroupMasters}}, "x")
	if got := ruleStrings(res, nonRes); err != nil || inc || !slices.Equal(got, []string{"res * * * ", "nonres * *"}) {
		t.Errorf("admin: %q %v %v", got, inc, err)
	}
	res, nonRes, inc, _ = chain.RulesFor(context.Background(), &user.DefaultInfo{Name: "bob", Groups: []string{GroupAuthenticated}}, "x")
	want := []string{
		"res create authentication.k8s.io selfsubjectreviews ",
		"res create authorization.k8s.io selfsubjectaccessreviews ",
		"res create authorization.k8s.io selfsubjectrulesreviews ",
		"res *  pods ",
	}
	if got := ruleStrings(res, nonRes); inc || !slices.Equal(got, want) {
		t.Errorf("bob: %q %v", got, inc)
	}
	res, _, _, _ = chain.RulesFor(context.Background(), &user.DefaultInfo{Name: "anon", Groups: []string{GroupUnauthenticated}}, "x")
	if len(res) != 0 {
		t.Errorf("unauthenticated: %q", ruleStrings(res, nil))
	}
	other := KubeAuthorizer{UnionAuthorizer{AuthorizerFunc(func(context.Context, *request.User, *request.Info) (Decision, string, error) {
		return DecisionNoOpinion, "", nil
	})}}
	if _, _, inc, _ := other.RulesFor(context.Background(), &user.DefaultInfo{Name: "bob"}, ""); !inc {
		t.Error("an authorizer without rules: list not incomplete")
	}
}

// TestSelfReviewsAllowed: every authenticated user may create exactly the
// three self reviews, and nothing else by that rule.
func TestSelfReviewsAllowed(t *testing.T) {
	authz := KubeAuthorizer{NewAuthorizer(nil)}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{GroupAuthenticated}}
	anon := &user.DefaultInfo{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}}
	for _, c := range []struct {
		u               user.Info
		verb, group, rs string
		want            authorizer.Decision
	}{
		{bob, "create", "authentication.k8s.io", "selfsubjectreviews", authorizer.DecisionAllow},
		{bob, "create", "authorization.k8s.io", "selfsubjectaccessreviews", authorizer.DecisionAllow},
		{bob, "create", "authorization.k8s.io", "selfsubjectrulesreviews", authorizer.DecisionAllow},
		{bob, "create", "authorization.k8s.io", "subjectaccessreviews", authorizer.DecisionNoOpinion},
		{bob, "create", "authorization.k8s.io", "localsubjectaccessreviews", authorizer.DecisionNoOpinion},
		{bob, "create", "authentication.k8s.io", "tokenreviews", authorizer.DecisionNoOpinion},
		{bob, "get", "authentication.k8s.io", "selfsubjectreviews", authorizer.DecisionNoOpinion},
		{bob, "create", "", "selfsubjectreviews", authorizer.DecisionNoOpinion},
		{anon, "create", "authentication.k8s.io", "selfsubjectreviews", authorizer.DecisionNoOpinion},
	} {
		d, _, err := authz.Authorize(context.Background(), authorizer.AttributesRecord{
			User: c.u, Verb: c.verb, APIGroup: c.group, APIVersion: "v1", Resource: c.rs, ResourceRequest: true})
		if d != c.want || err != nil {
			t.Errorf("%s %s %s.%s: %v %v, want %v", c.u.GetName(), c.verb, c.rs, c.group, d, err, c.want)
		}
	}
}

// TestKubeTokenAuthenticatorAudiences: a static token is valid for the
// API audiences only, as kube's audience-agnostic wrapper has it.
func TestKubeTokenAuthenticatorAudiences(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("tok,bob,1,dev\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := KubeTokenAuthenticator{Authenticator: tf, APIAudiences: []string{"api"}}
	req := func(token string, auds ...string) *http.Request {
		r := (&http.Request{Header: http.Header{}}).WithContext(context.Background())
		r.Header.Set("Authorization", "Bearer "+token)
		if auds != nil {
			r = r.WithContext(authenticator.WithAudiences(r.Context(), auds))
		}
		return r
	}
	resp, ok, err := a.AuthenticateRequest(req("tok", "other", "api"))
	if !ok || err != nil || resp.User.GetName() != "bob" || !slices.Equal(resp.Audiences, []string{"api"}) ||
		!slices.Equal(resp.User.GetGroups(), []string{"dev", GroupAuthenticated}) {
		t.Errorf("tok for api: %+v %v %v", resp, ok, err)
	}
	if _, ok, err := a.AuthenticateRequest(req("tok", "other")); ok || err == nil || err.Error() != "invalid bearer token" {
		t.Errorf("tok for other: %v %v", ok, err)
	}
	if _, ok, err := a.AuthenticateRequest(req("bad")); ok || err == nil || err.Error() != "invalid bearer token" {
		t.Errorf("bad token: %v %v", ok, err)
	}
}
