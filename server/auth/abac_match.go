package auth

import (
	"context"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/server/request"
)

// ReasonNoPolicyMatched is kube's reason when no ABAC rule matches.
const ReasonNoPolicyMatched = "No policy matched."

var _ Authorizer = PolicyList(nil)

// Authorize allows the request if any rule matches, else has no opinion.
func (pl PolicyList) Authorize(_ context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	if info == nil {
		return DecisionNoOpinion, ReasonNoPolicyMatched, nil
	}
	for _, p := range pl {
		if p.Matches(u, info) {
			return DecisionAllow, "", nil
		}
	}
	return DecisionNoOpinion, ReasonNoPolicyMatched, nil
}

// Matches reports whether the rule allows u to do info, by kube's ABAC rules.
func (p *Policy) Matches(u *request.User, info *request.Info) bool {
	if !p.subjectMatches(u) || !p.verbMatches(info) {
		return false
	}
	if info.IsResourceRequest {
		return p.resourceMatches(info)
	}
	return p.nonResourceMatches(info)
}

// subjectMatches: a rule with neither user nor group matches nobody; each
// one set must match.
func (p *Policy) subjectMatches(u *request.User) bool {
	if u == nil {
		return false
	}
	matched := false
	if s := p.Spec.User; s != "" {
		if s != "*" && s != u.Name {
			return false
		}
		matched = true
	}
	if g := p.Spec.Group; g != "" {
		if g != "*" && !slices.Contains(u.Groups, g) {
			return false
		}
		matched = true
	}
	return matched
}

func (p *Policy) verbMatches(info *request.Info) bool {
	return IsReadOnly(info.Verb) || !p.Spec.Readonly
}

func (p *Policy) resourceMatches(info *request.Info) bool {
	s := p.Spec
	return (s.Namespace == "*" || s.Namespace == info.Namespace) &&
		(s.Resource == "*" || s.Resource == info.Resource) &&
		(s.APIGroup == "*" || s.APIGroup == info.APIGroup)
}

func (p *Policy) nonResourceMatches(info *request.Info) bool {
	s := p.Spec.NonResourcePath
	switch {
	case s == "*", s == info.Path:
		return true
	case strings.HasSuffix(s, "*"):
		return strings.HasPrefix(info.Path, strings.TrimRight(s, "*"))
	}
	return false
}

// IsReadOnly reports whether verb only reads: get, list or watch.
func IsReadOnly(verb string) bool {
	return verb == "get" || verb == "list" || verb == "watch"
}
