package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadKubeconfigInClusterFallback: with no path, LoadKubeconfig looks
// where controller-runtime's GetConfig looks: $KUBECONFIG, then the pod's
// service account, then ~/.kube/config.
func TestLoadKubeconfigInClusterFallback(t *testing.T) {
	home, sa, other := t.TempDir(), t.TempDir(), t.TempDir()
	homeConfig := `current-context: home
clusters: [{name: h, cluster: {server: "https://home.example"}}]
contexts: [{name: home, context: {cluster: h}}]
`
	writeFile(t, filepath.Join(home, ".kube", "config"), homeConfig)
	envConfig := writeFile(t, filepath.Join(other, "config"), strings.ReplaceAll(homeConfig, "home.example", "env.example"))
	writeFile(t, filepath.Join(sa, "token"), "sa-token")
	writeFile(t, filepath.Join(sa, "ca.crt"), "ca")
	inPod := map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	envOf := func(vars map[string]string, saDir string) kubeconfigEnv {
		return kubeconfigEnv{
			getenv: func(k string) string { return vars[k] },
			home:   func() (string, error) { return home, nil },
			saDir:  saDir,
		}
	}
	with := func(vars map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for k, v := range vars {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		path    string
		context string
		env     kubeconfigEnv
		host    string
	}{
		{"in a pod", "", "", envOf(inPod, sa), "https://10.0.0.1:443"},
		{"$KUBECONFIG wins in a pod", "", "", envOf(with(inPod, "KUBECONFIG", envConfig), sa), "https://env.example"},
		{"a path wins in a pod", envConfig, "", envOf(inPod, sa), "https://env.example"},
		{"a named context means a kubeconfig", "", "home", envOf(inPod, sa), "https://home.example"},
		{"outside a pod", "", "", envOf(nil, sa), "https://home.example"},
		{"only the host set", "", "", envOf(map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, sa), "https://home.example"},
		{"no service account token", "", "", envOf(inPod, other), "https://home.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadKubeconfig(tc.path, tc.context, tc.env)
			if err != nil || cfg.Host != tc.host {
				t.Fatalf("loaded %+v, %v; want host %s", cfg, err, tc.host)
			}
			if tc.host == "https://10.0.0.1:443" &&
				(cfg.BearerTokenFile != filepath.Join(sa, "token") || cfg.CAFile != filepath.Join(sa, "ca.crt")) {
				t.Fatalf("in-cluster config %+v", cfg)
			}
		})
	}

	// Nothing anywhere: the error names ~/.kube/config, and the service
	// account's problem when the pod's variables were set.
	empty := t.TempDir()
	noHome := kubeconfigEnv{getenv: func(k string) string { return inPod[k] },
		home: func() (string, error) { return empty, nil }, saDir: other}
	_, err := loadKubeconfig("", "", noHome)
	if !errors.Is(err, ErrConfig) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "in-cluster") {
		t.Fatalf("nothing found: %v", err)
	}
	noHome.getenv = func(string) string { return "" }
	if _, err := loadKubeconfig("", "", noHome); !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "in-cluster") {
		t.Fatalf("nothing found outside a pod: %v", err)
	}
}
