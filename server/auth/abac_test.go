package auth

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/request"
)

func TestParsePolicyFile(t *testing.T) {
	const file = `
# comment
   # indented comment
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"*","resource":"*","apiGroup":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"*","nonResourcePath":"*","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"*","namespace":"x"}}
{"user":"bob","readonly":true,"namespace":"projectCaribou"}
{}
{"group":"*","resource":"pods"}
{"apiVersion":"abac.authorization.kubernetes.io/v0","kind":"Policy","user":"dave"}
`
	pl, err := ParsePolicyFile(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []PolicySpec{
		{User: "alice", Namespace: "*", Resource: "*", APIGroup: "*"},
		{Group: GroupAuthenticated, NonResourcePath: "*", Readonly: true},
		{Group: GroupAuthenticated, Namespace: "x"},
		{User: "bob", Readonly: true, Namespace: "projectCaribou", Resource: "*", APIGroup: "*"},
		{Group: GroupAuthenticated, Namespace: "*", Resource: "*", APIGroup: "*", NonResourcePath: "*"},
		{Group: GroupAuthenticated, Namespace: "*", Resource: "pods", APIGroup: "*"},
		{User: "dave", Namespace: "*", Resource: "*", APIGroup: "*", NonResourcePath: "*"},
	}
	if len(pl) != len(want) {
		t.Fatalf("%d policies, want %d", len(pl), len(want))
	}
	for i := range want {
		if pl[i].Spec != want[i] {
			t.Errorf("policy %d = %+v, want %+v", i, pl[i].Spec, want[i])
		}
	}
}

func TestParsePolicyFileErrors(t *testing.T) {
	for _, line := range []string{
		`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":`,
		`not json`,
		`{"apiVersion":"abac.authorization.kubernetes.io/v2","kind":"Policy"}`,
		// kube would silently read this as an unversioned allow-everything
		// line; we refuse a versioned line without its kind.
		`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","spec":{"user":"x"}}`,
		`{"kind":"Policy","user":"x"}`,
		`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"readonly":"yes"}}`,
	} {
		_, err := ParsePolicyFile(strings.NewReader("\n" + line + "\n"))
		if !errors.Is(err, ErrPolicyFile) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: err = %v, want ErrPolicyFile at line 2", line, err)
		}
	}
}

func res(verb, group, resource, ns string) *request.Info {
	return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Namespace: ns}
}

func nonRes(verb, path string) *request.Info {
	return &request.Info{Verb: verb, Path: path}
}

func TestPolicyMatches(t *testing.T) {
	alice := &request.User{Name: "alice", Groups: []string{"dev", GroupAuthenticated}}
	bob := &request.User{Name: "bob", Groups: []string{GroupAuthenticated}}
	tests := []struct {
		name string
		spec PolicySpec
		user *request.User
		info *request.Info
		want bool
	}{
		{"user exact", PolicySpec{User: "alice", Namespace: "*", Resource: "*", APIGroup: "*"}, alice, res("create", "", "pods", "ns"), true},
		{"other user", PolicySpec{User: "alice", Namespace: "*", Resource: "*", APIGroup: "*"}, bob, res("get", "", "pods", "ns"), false},
		{"group", PolicySpec{Group: "dev", Namespace: "*", Resource: "*", APIGroup: "*"}, alice, res("get", "", "pods", "ns"), true},
		{"group missing", PolicySpec{Group: "dev", Namespace: "*", Resource: "*", APIGroup: "*"}, bob, res("get", "", "pods", "ns"), false},
		{"user and group both required", PolicySpec{User: "alice", Group: "ops", Namespace: "*", Resource: "*", APIGroup: "*"}, alice, res("get", "", "pods", "ns"), false},
		{"no subject matches nobody", PolicySpec{Namespace: "*", Resource: "*", APIGroup: "*"}, alice, res("get", "", "pods", "ns"), false},
		{"nil user", PolicySpec{User: "*", Namespace: "*", Resource: "*", APIGroup: "*"}, nil, res("get", "", "pods", "ns"), false},
		{"authenticated group", PolicySpec{Group: GroupAuthenticated, Namespace: "*", Resource: "*", APIGroup: "*"}, bob, res("delete", "", "pods", "ns"), true},
		{"readonly get", PolicySpec{User: "bob", Readonly: true, Namespace: "*", Resource: "*", APIGroup: "*"}, bob, res("get", "", "pods", "ns"), true},
		{"readonly list", PolicySpec{User: "bob", Readonly: true, Namespace: "*", Resource: "*", APIGroup: "*"}, bob, res("list", "", "pods", "ns"), true},
		{"readonly watch", PolicySpec{User: "bob", Readonly: true, Namespace: "*", Resource: "*", APIGroup: "*"}, bob, res("watch", "", "pods", "ns"), true},
		{"readonly create", PolicySpec{User: "bob", Readonly: true, Namespace: "*", Resource: "*", APIGroup: "*"}, bob, res("create", "", "pods", "ns"), false},
		{"readonly patch", PolicySpec{User: "bob", Readonly: true, Namespace: "*", Resource: "*", APIGroup: "*"}, bob, res("patch", "", "pods", "ns"), false},
		{"namespace", PolicySpec{User: "bob", Namespace: "a", Resource: "*", APIGroup: "*"}, bob, res("get", "", "pods", "a"), true},
		{"other namespace", PolicySpec{User: "bob", Namespace: "a", Resource: "*", APIGroup: "*"}, bob, res("get", "", "pods", "b"), false},
		{"cluster scope needs * or empty ns", PolicySpec{User: "bob", Namespace: "a", Resource: "*", APIGroup: "*"}, bob, res("list", "", "nodes", ""), false},
		{"empty namespace matches cluster scope", PolicySpec{User: "bob", Resource: "*", APIGroup: "*"}, bob, res("list", "", "nodes", ""), true},
		{"resource", PolicySpec{User: "bob", Namespace: "*", Resource: "pods", APIGroup: "*"}, bob, res("get", "", "pods", "a"), true},
		{"other resource", PolicySpec{User: "bob", Namespace: "*", Resource: "pods", APIGroup: "*"}, bob, res("get", "", "secrets", "a"), false},
		{"api group", PolicySpec{User: "bob", Namespace: "*", Resource: "*", APIGroup: "apps"}, bob, res("get", "apps", "deployments", "a"), true},
		{"other api group", PolicySpec{User: "bob", Namespace: "*", Resource: "*", APIGroup: "apps"}, bob, res("get", "", "pods", "a"), false},
		{"empty api group is core only", PolicySpec{User: "bob", Namespace: "*", Resource: "*"}, bob, res("get", "apps", "deployments", "a"), false},
		{"resource policy vs path", PolicySpec{User: "bob", Namespace: "*", Resource: "*", APIGroup: "*"}, bob, nonRes("get", "/healthz"), false},
		{"path policy vs resource", PolicySpec{User: "bob", NonResourcePath: "*"}, bob, res("get", "", "pods", "a"), false},
		{"path *", PolicySpec{User: "bob", NonResourcePath: "*"}, bob, nonRes("get", "/version"), true},
		{"path exact", PolicySpec{User: "bob", NonResourcePath: "/version"}, bob, nonRes("get", "/version"), true},
		{"path exact other", PolicySpec{User: "bob", NonResourcePath: "/version"}, bob, nonRes("get", "/versions"), false},
		{"path prefix", PolicySpec{User: "bob", NonResourcePath: "/apis*"}, bob, nonRes("get", "/apis/apps/v1"), true},
		{"path prefix itself", PolicySpec{User: "bob", NonResourcePath: "/apis*"}, bob, nonRes("get", "/apis"), true},
		{"path prefix stars trimmed", PolicySpec{User: "bob", NonResourcePath: "/api/**"}, bob, nonRes("get", "/api/"), true},
		{"path prefix other", PolicySpec{User: "bob", NonResourcePath: "/apis/*"}, bob, nonRes("get", "/api/v1"), false},
		{"path readonly post", PolicySpec{User: "bob", NonResourcePath: "*", Readonly: true}, bob, nonRes("post", "/x"), false},
		{"path readonly get", PolicySpec{User: "bob", NonResourcePath: "*", Readonly: true}, bob, nonRes("get", "/x"), true},
	}
	for _, tt := range tests {
		p := &Policy{Spec: tt.spec}
		if got := p.Matches(tt.user, tt.info); got != tt.want {
			t.Errorf("%s: Matches = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAuthorizers(t *testing.T) {
	ctx := context.Background()
	admin := &request.User{Name: "admin", Groups: []string{GroupMasters, GroupAuthenticated}}
	bob := &request.User{Name: "bob", Groups: []string{GroupAuthenticated}}
	get := res("get", "", "pods", "default")

	noPolicy := NewAuthorizer(nil)
	if d, _, _ := noPolicy.Authorize(ctx, admin, get); d != DecisionAllow {
		t.Errorf("no policy, admin: %v", d)
	}
	if d, reason, err := noPolicy.Authorize(ctx, bob, get); d != DecisionNoOpinion || reason != "" || err != nil {
		t.Errorf("no policy, bob: %v %q %v", d, reason, err)
	}
	if d, _, _ := noPolicy.Authorize(ctx, nil, get); d != DecisionNoOpinion {
		t.Errorf("no policy, nil user: %v", d)
	}

	pl, err := ParsePolicyFile(strings.NewReader(
		`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"bob","namespace":"default","resource":"pods","apiGroup":"","readonly":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	withPolicy := NewAuthorizer(pl)
	for _, tt := range []struct {
		u    *request.User
		info *request.Info
		want Decision
	}{
		{admin, res("delete", "", "secrets", "kube-system"), DecisionAllow},
		{bob, get, DecisionAllow},
		{bob, res("delete", "", "pods", "default"), DecisionNoOpinion},
		{bob, res("get", "", "pods", "other"), DecisionNoOpinion},
	} {
		d, reason, err := withPolicy.Authorize(ctx, tt.u, tt.info)
		if d != tt.want || err != nil {
			t.Errorf("%s %s %s/%s: %v %v, want %v", tt.u.Name, tt.info.Verb, tt.info.Namespace, tt.info.Resource, d, err, tt.want)
		}
		if d == DecisionNoOpinion && reason != ReasonNoPolicyMatched {
			t.Errorf("reason %q", reason)
		}
	}
}

func TestUnionAuthorizer(t *testing.T) {
	errX := errors.New("x")
	no := func(reason string, err error) Authorizer {
		return AuthorizerFunc(func(context.Context, *request.User, *request.Info) (Decision, string, error) {
			return DecisionNoOpinion, reason, err
		})
	}
	deny := AuthorizerFunc(func(context.Context, *request.User, *request.Info) (Decision, string, error) {
		return DecisionDeny, "denied", nil
	})
	allow := PrivilegedGroups("g")
	u := &request.User{Groups: []string{"g"}}
	if d, r, _ := (UnionAuthorizer{no("a", nil), deny, allow}).Authorize(context.Background(), u, nil); d != DecisionDeny || r != "denied" {
		t.Errorf("deny first: %v %q", d, r)
	}
	if d, _, _ := (UnionAuthorizer{no("", errX), allow, deny}).Authorize(context.Background(), u, nil); d != DecisionAllow {
		t.Errorf("allow after error: %v", d)
	}
	d, r, err := (UnionAuthorizer{no("a", nil), no("b", errX)}).Authorize(context.Background(), u, nil)
	if d != DecisionNoOpinion || r != "a\nb" || !errors.Is(err, errX) {
		t.Errorf("all no opinion: %v %q %v", d, r, err)
	}
}
