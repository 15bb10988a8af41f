package auth

import (
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// FuzzAuthorizationModes: any --authorization-mode list either fails
// validation or builds a chain; Node and Webhook never pass.
func FuzzAuthorizationModes(f *testing.F) {
	for _, s := range []string{"RBAC", "RBAC,ABAC", "AlwaysDeny,AlwaysAllow", "Node,RBAC", "Webhook", "", ",", "RBAC,RBAC", "abac"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	rbac := NewRBAC(fake.NewClientset())
	f.Fuzz(func(t *testing.T, list string, policyFile bool) {
		modes := strings.Split(list, ",")
		if list == "" {
			modes = nil
		}
		if err := ValidateModes(modes, policyFile); err != nil {
			return
		}
		for _, m := range modes {
			if m == ModeNode || m == ModeWebhook {
				t.Fatalf("%q passed validation", list)
			}
		}
		var policy PolicyList
		if policyFile {
			policy = PolicyList{}
		}
		if _, err := NewChain(ChainConfig{Modes: modes, Policy: policy, RBAC: rbac}); err != nil {
			t.Fatalf("%q valid but: %v", list, err)
		}
	})
}
