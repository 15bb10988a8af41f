package server

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestParamLookupResolve: kinds resolve to their resource as kube's
// discovery resolver does (never a subresource with the same kind), and
// an unknown kind or group-version is an error, which kube's strategies
// read as "every resource".
func TestParamLookupResolve(t *testing.T) {
	e := newEnv(t)
	l := paramLookup{s: e.srv}
	for gvk, want := range map[schema.GroupVersionKind]string{
		{Version: "v1", Kind: "ConfigMap"}:                          "configmaps",
		{Group: "apps", Version: "v1", Kind: "Deployment"}:          "deployments",
		{Version: "v1", Kind: "Pod"}:                                "pods",
		{Group: "autoscaling", Version: "v1", Kind: "Scale"}:        "",
		{Group: "apps", Version: "v9", Kind: "Deployment"}:          "",
		{Group: "nothing.example.com", Version: "v1", Kind: "Nope"}: "",
	} {
		got, err := l.Resolve(gvk)
		if want == "" {
			if err == nil {
				t.Errorf("%v resolved to %v, want an error", gvk, got)
			}
			continue
		}
		if err != nil || got != gvk.GroupVersion().WithResource(want) {
			t.Errorf("%v: %v %v, want %s", gvk, got, err, want)
		}
	}
	if _, err := (paramLookup{}).Resolve(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}); err == nil {
		t.Error("no server: resolved")
	}
	if _, err := l.GetMutatingAdmissionPolicy(context.Background(), "absent"); err == nil {
		t.Error("absent policy found")
	}
}
