package auth

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/server/request"
)

// Decision is an authorizer's verdict.
type Decision int

const (
	// DecisionNoOpinion lets the next authorizer decide; at the end of a
	// chain it means forbidden.
	DecisionNoOpinion Decision = iota
	// DecisionAllow allows the request and ends the chain.
	DecisionAllow
	// DecisionDeny forbids the request and ends the chain.
	DecisionDeny
)

func (d Decision) String() string {
	switch d {
	case DecisionAllow:
		return "Allow"
	case DecisionDeny:
		return "Deny"
	default:
		return "NoOpinion"
	}
}

// Authorizer decides whether u may do what info describes. The reason is
// shown to the client after a forbidden message; an error with a decision
// other than Allow makes the request fail with 500.
type Authorizer interface {
	Authorize(ctx context.Context, u *request.User, info *request.Info) (Decision, string, error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, u *request.User, info *request.Info) (Decision, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	return f(ctx, u, info)
}

var _ Authorizer = AuthorizerFunc(nil)

// UnionAuthorizer asks its members in order; the first Allow or Deny wins.
// If all have no opinion it returns NoOpinion with their reasons joined by
// newlines and their errors joined.
type UnionAuthorizer []Authorizer

// Authorize implements Authorizer.
func (ua UnionAuthorizer) Authorize(ctx context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	var (
		errs    []error
		reasons []string
	)
	for _, a := range ua {
		d, reason, err := a.Authorize(ctx, u, info)
		if d == DecisionAllow || d == DecisionDeny {
			return d, reason, err
		}
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}

// PrivilegedGroups allows every request of a member of any of groups and has
// no opinion on the rest.
func PrivilegedGroups(groups ...string) Authorizer {
	return privilegedGroups(groups)
}

type privilegedGroups []string

func (p privilegedGroups) Authorize(_ context.Context, u *request.User, _ *request.Info) (Decision, string, error) {
	if u != nil && slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(p, g) }) {
		return DecisionAllow, "", nil
	}
	return DecisionNoOpinion, "", nil
}

// NewAuthorizer is the server's authorization chain: system:masters first,
// then SelfReviews (what kube's system:basic-user role grants every
// authenticated user) and ServiceAccountIssuerDiscovery (kube's
// system:service-account-issuer-discovery binding), then the ABAC policy.
// A nil policy (no policy file) allows nobody else; an empty, non-nil
// policy likewise.
func NewAuthorizer(policy PolicyList) Authorizer {
	if policy == nil {
		return UnionAuthorizer{PrivilegedGroups(GroupMasters), SelfReviews, ServiceAccountIssuerDiscovery}
	}
	return UnionAuthorizer{PrivilegedGroups(GroupMasters), SelfReviews, ServiceAccountIssuerDiscovery, policy}
}
