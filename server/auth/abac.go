package auth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrPolicyFile wraps every error of ParsePolicyFile.
var ErrPolicyFile = errors.New("auth: policy file")

// ABAC API versions Kubernetes reads.
const (
	ABACv1beta1 = "abac.authorization.kubernetes.io/v1beta1"
	ABACv0      = "abac.authorization.kubernetes.io/v0"
)

// Policy is one ABAC rule, in the internal form both file versions convert
// to (kube's abac.Policy).
type Policy struct {
	Spec PolicySpec
}

// PolicySpec is what a rule matches. Empty strings match nothing except where
// noted; "*" matches anything.
type PolicySpec struct {
	// User, if set, must equal the user's name.
	User string `json:"user,omitempty"`
	// Group, if set, must be one of the user's groups.
	Group string `json:"group,omitempty"`
	// Readonly restricts the rule to get, list and watch.
	Readonly bool `json:"readonly,omitempty"`
	// APIGroup, Resource and Namespace must all match a resource request.
	APIGroup  string `json:"apiGroup,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// NonResourcePath matches the path of a non-resource request exactly,
	// or as a prefix when it ends in "*".
	NonResourcePath string `json:"nonResourcePath,omitempty"`
}

// PolicyList is an ABAC policy: the request is allowed if any rule matches.
type PolicyList []*Policy

// policyLine is a line in either version; versioned lines have
// apiVersion, kind and spec, unversioned (v0) ones have the fields inline.
type policyLine struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Spec       *PolicySpec `json:"spec"`
	v0Policy
}

// v0Policy is the legacy, unversioned form.
type v0Policy struct {
	User      string `json:"user"`
	Group     string `json:"group"`
	Readonly  bool   `json:"readonly"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
}

// maxPolicyLine bounds one line of the policy file.
const maxPolicyLine = 1 << 20

// ParsePolicyFile reads an ABAC policy file: one JSON object per line; blank
// lines and lines starting with "#" (after spaces) are skipped. A line with
// apiVersion abac.authorization.kubernetes.io/v1beta1 and kind Policy is
// taken as is, except that user or group "*" becomes group
// system:authenticated. A line with neither apiVersion nor kind (or version
// v0) is the legacy form and converts as kube converts it: no user and no
// group, or either "*", means system:authenticated; an empty namespace or
// resource means "*"; any API group; and with both empty, any non-resource
// path too.
func ParsePolicyFile(r io.Reader) (PolicyList, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxPolicyLine)
	pl := PolicyList{}
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		p, err := parsePolicyLine(b)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrPolicyFile, n, err)
		}
		pl = append(pl, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicyFile, err)
	}
	return pl, nil
}

func parsePolicyLine(b []byte) (*Policy, error) {
	var l policyLine
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	switch {
	case l.APIVersion == ABACv1beta1 && l.Kind == "Policy":
		if l.Spec == nil {
			return &Policy{}, nil
		}
		p := &Policy{Spec: *l.Spec}
		if p.Spec.User == "*" || p.Spec.Group == "*" {
			p.Spec.Group = GroupAuthenticated
			p.Spec.User = ""
		}
		return p, nil
	case (l.APIVersion == "" && l.Kind == "") || (l.APIVersion == ABACv0 && l.Kind == "Policy"):
		return convertV0(l.v0Policy), nil
	default:
		return nil, fmt.Errorf("unknown policy apiVersion %q kind %q", l.APIVersion, l.Kind)
	}
}

func convertV0(in v0Policy) *Policy {
	s := PolicySpec{
		User: in.User, Group: in.Group, Readonly: in.Readonly,
		Namespace: in.Namespace, Resource: in.Resource, APIGroup: "*",
	}
	if in.User == "" && in.Group == "" {
		s.Group = GroupAuthenticated
	}
	if in.User == "*" || in.Group == "*" {
		s.Group, s.User = GroupAuthenticated, ""
	}
	if in.Namespace == "" {
		s.Namespace = "*"
	}
	if in.Resource == "" {
		s.Resource = "*"
	}
	if in.Namespace == "" && in.Resource == "" {
		s.NonResourcePath = "*"
	}
	return &Policy{Spec: s}
}
