package auth

import (
	"context"
	"slices"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/listwatch/listwatch/server/request"
)

// GroupServiceAccounts is kube's group of every service account.
const GroupServiceAccounts = "system:serviceaccounts"

// issuerDiscoveryPaths are the service-account issuer's OIDC discovery
// documents, with the slash-ended forms kube's role also allows.
var issuerDiscoveryPaths = []string{
	"/.well-known/openid-configuration",
	"/.well-known/openid-configuration/",
	"/openid/v1/jwks",
	"/openid/v1/jwks/",
}

// ServiceAccountIssuerDiscovery is kube's bootstrap ClusterRole
// system:service-account-issuer-discovery (get on the OIDC discovery
// paths) with its bootstrap ClusterRoleBinding to the group
// system:serviceaccounts: every service account may read the issuer's
// discovery document and keys; other users need the admin or a policy
// that grants the paths. It has no opinion on anything else.
//
// This is the one place authorization of these paths is decided; an RBAC
// authorizer with kube's bootstrap policy would replace it.
var ServiceAccountIssuerDiscovery Authorizer = issuerDiscovery{}

type issuerDiscovery struct{}

func (issuerDiscovery) Authorize(_ context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	if u == nil || info == nil || info.IsResourceRequest || info.Verb != "get" ||
		!slices.Contains(u.Groups, GroupServiceAccounts) || !slices.Contains(issuerDiscoveryPaths, info.Path) {
		return DecisionNoOpinion, "", nil
	}
	return DecisionAllow, "", nil
}

func (issuerDiscovery) rules(u *request.User, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo) {
	if u == nil || !slices.Contains(u.Groups, GroupServiceAccounts) {
		return nil, nil
	}
	return nil, []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{
		Verbs: []string{"get"}, NonResourceURLs: slices.Clone(issuerDiscoveryPaths),
	}}
}
