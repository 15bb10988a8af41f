package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/listwatch/listwatch/server/request"
)

// Adapters from this package's authenticators and authorizers to
// k8s.io/apiserver's interfaces, for kube's access-review and token-review
// REST implementations (package server serves them).

// UserFromKube converts a kube user to ours.
func UserFromKube(u user.Info) *request.User {
	if u == nil {
		return nil
	}
	return &request.User{Name: u.GetName(), UID: u.GetUID(), Groups: slices.Clone(u.GetGroups()), Extra: cloneExtra(u.GetExtra())}
}

func cloneExtra(e map[string][]string) map[string][]string {
	if len(e) == 0 {
		return nil
	}
	c := make(map[string][]string, len(e))
	for k, v := range e {
		c[k] = slices.Clone(v)
	}
	return c
}

// UserToKube converts our user to kube's.
func UserToKube(u *request.User) user.Info {
	if u == nil {
		return nil
	}
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups), Extra: cloneExtra(u.Extra)}
}

// KubeAuthorizer adapts a to kube's authorizer interface.
type KubeAuthorizer struct{ Authorizer Authorizer }

// Authorize implements authorizer.UnconditionalAuthorizer.
func (k KubeAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	info := &request.Info{
		IsResourceRequest: a.IsResourceRequest(),
		Path:              a.GetPath(),
		Verb:              a.GetVerb(),
		APIGroup:          a.GetAPIGroup(),
		APIVersion:        a.GetAPIVersion(),
		Namespace:         a.GetNamespace(),
		Resource:          a.GetResource(),
		Subresource:       a.GetSubresource(),
		Name:              a.GetName(),
	}
	d, reason, err := k.Authorizer.Authorize(ctx, UserFromKube(a.GetUser()), info)
	switch d {
	case DecisionAllow:
		return authorizer.DecisionAllow, reason, err
	case DecisionDeny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}

// RulesFor implements authorizer.RuleResolver over the authorizer's
// rules (see Rules).
func (k KubeAuthorizer) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	res, nonRes, incomplete := Rules(k.Authorizer, UserFromKube(u), namespace)
	return res, nonRes, incomplete, nil
}

var (
	_ authorizer.UnconditionalAuthorizer = KubeAuthorizer{}
	_ authorizer.RuleResolver            = KubeAuthorizer{}
)

// ruleLister is an authorizer that can list what it allows a user in a
// namespace, as kube's RuleResolver does.
type ruleLister interface {
	rules(u *request.User, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo)
}

// Rules lists what a allows u in namespace: the union of the rules of
// the members of a UnionAuthorizer, of PrivilegedGroups (everything), of
// an ABAC PolicyList (kube's ABAC RulesFor) and of SelfReviews. An
// authorizer of another kind makes the list incomplete.
func Rules(a Authorizer, u *request.User, namespace string) (res []authorizer.ResourceRuleInfo, nonRes []authorizer.NonResourceRuleInfo, incomplete bool) {
	switch a := a.(type) {
	case UnionAuthorizer:
		for _, m := range a {
			r, n, inc := Rules(m, u, namespace)
			res, nonRes = append(res, r...), append(nonRes, n...)
			incomplete = incomplete || inc
		}
		return res, nonRes, incomplete
	case ruleLister:
		r, n := a.rules(u, namespace)
		return r, n, false
	}
	return nil, nil, true
}

func (p privilegedGroups) rules(u *request.User, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo) {
	if d, _, _ := p.Authorize(context.Background(), u, nil); d != DecisionAllow {
		return nil, nil
	}
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{
			Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
		}}, []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{
			Verbs: []string{"*"}, NonResourceURLs: []string{"*"},
		}}
}

// rules is kube's ABAC RulesFor: each rule whose subject matches u and
// whose namespace is "*" or namespace gives a resource rule (if it names a
// resource) and a non-resource rule (if it names a path), with verbs get,
// list, watch when read-only and "*" otherwise.
func (pl PolicyList) rules(u *request.User, namespace string) (res []authorizer.ResourceRuleInfo, nonRes []authorizer.NonResourceRuleInfo) {
	for _, p := range pl {
		if !p.subjectMatches(u) || (p.Spec.Namespace != "*" && p.Spec.Namespace != namespace) {
			continue
		}
		verbs := []string{"*"}
		if p.Spec.Readonly {
			verbs = []string{"get", "list", "watch"}
		}
		if p.Spec.Resource != "" {
			res = append(res, &authorizer.DefaultResourceRuleInfo{
				Verbs: verbs, APIGroups: []string{p.Spec.APIGroup}, Resources: []string{p.Spec.Resource},
			})
		}
		if p.Spec.NonResourcePath != "" {
			nonRes = append(nonRes, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: verbs, NonResourceURLs: []string{p.Spec.NonResourcePath},
			})
		}
	}
	return res, nonRes
}

// KubeTokenAuthenticator adapts a token authenticator (bearer tokens only:
// the request kube's TokenReview builds has nothing but the header) to
// kube's, with kube's handling of audiences for tokens that have none
// (authenticator.WrapAudienceAgnosticToken): when the request asks for
// audiences, the token is valid only if one of them is an API audience,
// and the response carries those. A token not accepted gets kube's error,
// "invalid bearer token".
//
// ServiceAccounts, if set, is tried first: kube's service-account token
// authenticator, which knows the audiences of its tokens and checks them
// against those the review asks for (or the API audiences).
type KubeTokenAuthenticator struct {
	Authenticator   Authenticator
	APIAudiences    []string
	ServiceAccounts authenticator.Token
}

// AuthenticateRequest implements authenticator.Request.
func (k KubeTokenAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if k.ServiceAccounts != nil {
		if tok, ok := bearerToken(r); ok {
			resp, ok, err := k.ServiceAccounts.AuthenticateToken(r.Context(), tok)
			if err != nil {
				return nil, false, err
			}
			if ok {
				return resp, true, nil
			}
		}
	}
	var auds authenticator.Audiences
	if want, ok := authenticator.AudiencesFrom(r.Context()); ok && len(k.APIAudiences) > 0 {
		auds = authenticator.Audiences(k.APIAudiences).Intersect(want)
		if len(auds) == 0 {
			return nil, false, errKubeInvalidToken
		}
	}
	u, ok, _ := k.Authenticator.Authenticate(r)
	if !ok {
		return nil, false, errKubeInvalidToken
	}
	return &authenticator.Response{Audiences: auds, User: UserToKube(WithAuthenticatedGroup(u))}, true, nil
}

var _ authenticator.Request = KubeTokenAuthenticator{}

// errKubeInvalidToken is kube's error for a bearer token that no token
// authenticator accepts (its bearertoken authenticator's), which a
// TokenReview shows in status.error.
var errKubeInvalidToken = errors.New("invalid bearer token")
