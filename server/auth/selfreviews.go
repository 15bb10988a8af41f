package auth

import (
	"context"
	"slices"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/listwatch/listwatch/server/request"
)

// selfReviewResources are the resources kube's system:basic-user
// ClusterRole lets every authenticated user create: they only tell users
// about themselves.
var selfReviewResources = []struct{ group, resource string }{
	{"authentication.k8s.io", "selfsubjectreviews"},
	{"authorization.k8s.io", "selfsubjectaccessreviews"},
	{"authorization.k8s.io", "selfsubjectrulesreviews"},
}

// SelfReviews allows every user in system:authenticated to create
// selfsubjectreviews, selfsubjectaccessreviews and selfsubjectrulesreviews
// (kube's system:basic-user role, bound to system:authenticated), and has
// no opinion on anything else.
var SelfReviews Authorizer = selfReviews{}

type selfReviews struct{}

func (selfReviews) Authorize(_ context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	if u == nil || info == nil || !info.IsResourceRequest || info.Verb != "create" || info.Subresource != "" ||
		!slices.Contains(u.Groups, GroupAuthenticated) {
		return DecisionNoOpinion, "", nil
	}
	for _, r := range selfReviewResources {
		if info.APIGroup == r.group && info.Resource == r.resource {
			return DecisionAllow, "", nil
		}
	}
	return DecisionNoOpinion, "", nil
}

func (selfReviews) rules(u *request.User, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo) {
	if u == nil || !slices.Contains(u.Groups, GroupAuthenticated) {
		return nil, nil
	}
	var out []authorizer.ResourceRuleInfo
	for _, r := range selfReviewResources {
		out = append(out, &authorizer.DefaultResourceRuleInfo{
			Verbs: []string{"create"}, APIGroups: []string{r.group}, Resources: []string{r.resource},
		})
	}
	return out, nil
}
