package server

import (
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server/auth"
)

// TestBuiltinPluginsOnDelete holds what builtinAdmission.acts assumes of
// kube's plugins: of those the server runs, only Priority handles DELETE,
// none CONNECT. The plugins are made as the server makes them, over a
// client they never call here.
func TestBuiltinPluginsOnDelete(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	before, after, err := builtinPluginNames(AdmissionPlugins{})
	if err != nil {
		t.Fatal(err)
	}
	names := append(before, after...)
	for _, want := range []string{"LimitRanger", "Priority", "DefaultTolerationSeconds", "PodSecurity", "ResourceQuota"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not run: %v", want, names)
		}
	}
	for _, not := range []string{"NamespaceLifecycle", "ServiceAccount", "ValidatingAdmissionWebhook", "AlwaysDeny"} {
		if slices.Contains(names, not) {
			t.Errorf("%s is run from the registry: %v", not, names)
		}
	}
	plugins, err := builtinPlugins(cs, dyn, informers.NewSharedInformerFactory(cs, 0), auth.NewAuthorizer(nil), stop, names)
	if err != nil {
		t.Fatal(err)
	}
	if len(plugins) != len(names) {
		t.Fatalf("%d plugins of %d names", len(plugins), len(names))
	}
	for i, p := range plugins {
		if p.Handles(admission.Delete) != (names[i] == "Priority") {
			t.Errorf("%s handles DELETE: %v", names[i], p.Handles(admission.Delete))
		}
		if p.Handles(admission.Connect) {
			t.Errorf("%s handles CONNECT", names[i])
		}
	}
}

// TestAdmissionPluginChoice: kube's --enable-admission-plugins and
// --disable-admission-plugins over the server's defaults.
func TestAdmissionPluginChoice(t *testing.T) {
	names := func(choice AdmissionPlugins) []string {
		t.Helper()
		before, after, err := builtinPluginNames(choice)
		if err != nil {
			t.Fatal(err)
		}
		return append(before, after...)
	}
	defaults := names(AdmissionPlugins{})
	got := names(AdmissionPlugins{Enable: []string{"ServiceAccount", "AlwaysPullImages"}, Disable: []string{"PodSecurity", "ResourceQuota"}})
	// kube's order: LimitRanger, ServiceAccount, …, AlwaysPullImages, …
	if i, j := slices.Index(got, "ServiceAccount"), slices.Index(got, "AlwaysPullImages"); i < 0 || j < i || slices.Index(got, "LimitRanger") > i {
		t.Errorf("enabled out of kube's order: %v", got)
	}
	if slices.Contains(got, "PodSecurity") || slices.Contains(got, "ResourceQuota") {
		t.Errorf("disabled still run: %v", got)
	}
	if len(got) != len(defaults) {
		t.Errorf("two enabled and two disabled: %d plugins, defaults %d", len(got), len(defaults))
	}
	for _, c := range []struct {
		choice AdmissionPlugins
		err    string
	}{
		{AdmissionPlugins{Enable: []string{"Bogus"}}, `admission plugin "Bogus" is unknown`},
		{AdmissionPlugins{Disable: []string{"NamespaceLifecycle"}}, `admission plugin "NamespaceLifecycle" is part of this server and cannot be disabled`},
		{AdmissionPlugins{Enable: []string{"Priority"}, Disable: []string{"Priority"}}, `admission plugin "Priority" is both enabled and disabled`},
	} {
		if _, _, err := builtinPluginNames(c.choice); err == nil || err.Error() != c.err {
			t.Errorf("%+v: %v, want %s", c.choice, err, c.err)
		}
	}
}
