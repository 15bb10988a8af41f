package apiserver

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestAuthorizationModeOptions: the default modes, and kube's refusals.
func TestAuthorizationModeOptions(t *testing.T) {
	for _, c := range []struct {
		modes  []string
		policy string
		want   []string
		err    string
	}{
		{nil, "", []string{"RBAC"}, ""},
		{nil, "policy.jsonl", []string{"RBAC", "ABAC"}, ""},
		{[]string{"ABAC", "RBAC"}, "policy.jsonl", []string{"ABAC", "RBAC"}, ""},
		{[]string{"AlwaysAllow"}, "", []string{"AlwaysAllow"}, ""},
		{[]string{"RBAC"}, "policy.jsonl", nil, "cannot specify --authorization-policy-file without mode ABAC"},
		{[]string{"Node"}, "", nil, `authorization-mode "Node" is not supported`},
		{[]string{}, "", nil, "at least one authorization-mode must be passed"},
	} {
		o, err := Options{DataDir: t.TempDir(), AuthorizationModes: c.modes, AuthorizationPolicyFile: c.policy}.withDefaults()
		if c.err != "" {
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %q: %v, want %q", c.modes, c.policy, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(o.AuthorizationModes, c.want) {
			t.Errorf("%v %q: %v %v, want %v", c.modes, c.policy, o.AuthorizationModes, err, c.want)
		}
	}
}
