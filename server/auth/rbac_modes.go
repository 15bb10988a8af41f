package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"

	"github.com/listwatch/listwatch/server/request"
)

// Authorization modes, as kube-apiserver's --authorization-mode spells them.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeABAC        = "ABAC"
	ModeRBAC        = "RBAC"
	ModeNode        = "Node"
	ModeWebhook     = "Webhook"
)

// kubeModes are every mode kube-apiserver knows; Node and Webhook are
// among them but this server has neither.
var kubeModes = []string{ModeAlwaysAllow, ModeAlwaysDeny, ModeABAC, ModeWebhook, ModeRBAC, ModeNode}

// DefaultModes is the --authorization-mode of a server not given one: RBAC,
// and ABAC after it when there is a policy file, so that a policy file
// given without a mode (as before this server had RBAC) still applies.
func DefaultModes(policyFile bool) []string {
	if policyFile {
		return []string{ModeRBAC, ModeABAC}
	}
	return []string{ModeRBAC}
}

// ValidateModes checks an --authorization-mode list with kube-apiserver's
// rules and messages (every mode known, none twice, ABAC if and only if
// there is a policy file), and refuses the modes this server does not have
// (Node, Webhook).
func ValidateModes(modes []string, policyFile bool) error {
	var errs []error
	if len(modes) == 0 {
		errs = append(errs, errors.New("at least one authorization-mode must be passed"))
	}
	seen := map[string]bool{}
	dup := false
	for _, m := range modes {
		switch {
		case !slices.Contains(kubeModes, m):
			errs = append(errs, fmt.Errorf("authorization-mode %q is not a valid mode", m))
		case m == ModeNode || m == ModeWebhook:
			errs = append(errs, fmt.Errorf("authorization-mode %q is not supported by this server (supported: %s, %s, %s, %s)",
				m, ModeRBAC, ModeABAC, ModeAlwaysAllow, ModeAlwaysDeny))
		case m == ModeABAC && !policyFile:
			errs = append(errs, errors.New("authorization-mode ABAC's authorization policy file not passed"))
		}
		if seen[m] {
			dup = true
		}
		seen[m] = true
	}
	if policyFile && !seen[ModeABAC] {
		errs = append(errs, errors.New("cannot specify --authorization-policy-file without mode ABAC"))
	}
	if dup {
		errs = append(errs, fmt.Errorf("authorization-mode %q has mode specified more than once", modes))
	}
	return errors.Join(errs...)
}

// ChainConfig is what NewChain builds a chain from.
type ChainConfig struct {
	// Modes is the --authorization-mode list (ValidateModes).
	Modes []string
	// Policy is the ABAC policy, for mode ABAC.
	Policy PolicyList
	// RBAC is the RBAC authorizer, for mode RBAC.
	RBAC *RBAC
}

// Chain is the server's authorization chain, as kube-apiserver builds it:
// members of system:masters are allowed everything first, then each mode
// in order decides or passes on. Its rule resolver (for
// SelfSubjectRulesReviews) is the union of the modes' ones; the
// system:masters authorizer has none, as in kube.
//
// Without RBAC in the modes, what kube's system:basic-user ClusterRole
// grants every authenticated user (creating self reviews, SelfReviews)
// and what system:service-account-issuer-discovery grants service
// accounts (ServiceAccountIssuerDiscovery) come right after
// system:masters; with RBAC kube's bootstrap roles themselves do.
type Chain struct {
	authz     UnionAuthorizer
	resolvers []authorizer.RuleResolver
}

// NewChain builds the chain of cfg.Modes.
func NewChain(cfg ChainConfig) (*Chain, error) {
	c := &Chain{authz: UnionAuthorizer{PrivilegedGroups(GroupMasters)}}
	if !slices.Contains(cfg.Modes, ModeRBAC) {
		c.add("", SelfReviews, ourResolver{SelfReviews})
		c.add("", ServiceAccountIssuerDiscovery, ourResolver{ServiceAccountIssuerDiscovery})
	}
	for _, m := range cfg.Modes {
		switch m {
		case ModeAlwaysAllow:
			a := authorizerfactory.NewAlwaysAllowAuthorizer()
			c.add(m, FromKube(a), a)
		case ModeAlwaysDeny:
			a := authorizerfactory.NewAlwaysDenyAuthorizer()
			c.add(m, FromKube(a), a)
		case ModeABAC:
			if cfg.Policy == nil {
				return nil, errors.New("authorization-mode ABAC's authorization policy file not passed")
			}
			c.add(m, cfg.Policy, ourResolver{cfg.Policy})
		case ModeRBAC:
			if cfg.RBAC == nil {
				return nil, errors.New("auth: authorization-mode RBAC needs its authorizer")
			}
			c.add(m, cfg.RBAC, cfg.RBAC)
		default:
			return nil, fmt.Errorf("authorization-mode %q is not supported by this server", m)
		}
	}
	return c, nil
}

// add appends a mode's authorizer; the reasons it gives when it has no
// opinion are prefixed with the mode's name in lower case, as kube's
// named union of authorizers does ("rbac: ...", "abac: No policy
// matched.").
func (c *Chain) add(mode string, a Authorizer, r authorizer.RuleResolver) {
	if mode != "" {
		a = named{name: strings.ToLower(mode), a: a}
	}
	c.authz = append(c.authz, a)
	c.resolvers = append(c.resolvers, r)
}

type named struct {
	name string
	a    Authorizer
}

func (n named) Authorize(ctx context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	d, reason, err := n.a.Authorize(ctx, u, info)
	if d == DecisionNoOpinion && reason != "" {
		reason = n.name + ": " + reason
	}
	return d, reason, err
}

// Authorize implements Authorizer.
func (c *Chain) Authorize(ctx context.Context, u *request.User, info *request.Info) (Decision, string, error) {
	return c.authz.Authorize(ctx, u, info)
}

// RulesFor implements kube's authorizer.RuleResolver: the union of the
// modes' rules (kube's union.NewRuleResolvers).
func (c *Chain) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return union.NewRuleResolvers(c.resolvers...).RulesFor(ctx, u, namespace)
}

// ourResolver resolves the rules of one of this package's authorizers
// (Rules).
type ourResolver struct{ a Authorizer }

func (o ourResolver) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	res, nonRes, incomplete := Rules(o.a, UserFromKube(u), namespace)
	return res, nonRes, incomplete, nil
}
