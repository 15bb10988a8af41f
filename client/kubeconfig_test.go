package client

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const fullKubeconfig = `apiVersion: v1
kind: Config
current-context: files
preferences: {}
clusters:
- name: prod
  cluster:
    server: https://prod.example:6443/prefix
    certificate-authority: certs/ca.crt
    tls-server-name: api.internal
- name: dev
  cluster:
    server: https://127.0.0.1:8443
    certificate-authority-data: Q0EtREFUQQ==
- name: lab
  cluster:
    server: https://lab.example
    insecure-skip-tls-verify: true
    disable-compression: true
users:
- name: file-user
  user:
    client-certificate: certs/client.crt
    client-key: /abs/client.key
    tokenFile: token
- name: data-user
  user:
    token: secret-token
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: exec-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ./bin/plugin
      args: ["get-token", "--x"]
      env:
      - name: FOO
        value: bar
      installHint: install the plugin
      provideClusterInfo: true
      interactiveMode: Never
- name: path-exec-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
contexts:
- name: files
  context: {cluster: prod, user: file-user, namespace: team-a}
- name: data
  context: {cluster: dev, user: data-user}
- name: exec
  context: {cluster: lab, user: exec-user}
- name: path-exec
  context: {cluster: lab, user: path-exec-user}
- name: anonymous
  context: {cluster: lab}
`

func TestLoadKubeconfigEveryField(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "config"), fullKubeconfig)

	cfg, err := LoadKubeconfig(path, "") // current-context: files
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Host:            "https://prod.example:6443/prefix",
		CAFile:          filepath.Join(dir, "certs/ca.crt"),
		ServerName:      "api.internal",
		CertFile:        filepath.Join(dir, "certs/client.crt"),
		KeyFile:         "/abs/client.key",
		BearerTokenFile: filepath.Join(dir, "token"),
		Namespace:       "team-a",
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("files context:\n got %+v\nwant %+v", cfg, want)
	}

	cfg, err = LoadKubeconfig(path, "data")
	if err != nil {
		t.Fatal(err)
	}
	want = &Config{Host: "https://127.0.0.1:8443", CAData: []byte("CA-DATA"), BearerToken: "secret-token",
		CertData: []byte("CERT"), KeyData: []byte("KEY")}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("data context:\n got %+v\nwant %+v", cfg, want)
	}

	cfg, err = LoadKubeconfig(path, "exec")
	if err != nil {
		t.Fatal(err)
	}
	wantExec := &ExecConfig{APIVersion: ExecAPIVersionV1beta1, Command: filepath.Join(dir, "bin/plugin"),
		Args: []string{"get-token", "--x"}, Env: []ExecEnvVar{{Name: "FOO", Value: "bar"}},
		InstallHint: "install the plugin", ProvideClusterInfo: true, InteractiveMode: "Never"}
	if !cfg.Insecure || cfg.Host != "https://lab.example" || !reflect.DeepEqual(cfg.Exec, wantExec) || cfg.Compression != CompressionNone {
		t.Fatalf("exec context: %+v exec %+v", cfg, cfg.Exec)
	}

	// A bare command name is looked up in PATH, not next to the file.
	cfg, err = LoadKubeconfig(path, "path-exec")
	if err != nil || cfg.Exec.Command != "aws" {
		t.Fatalf("path-exec: %+v %v", cfg, err)
	}
	cfg, err = LoadKubeconfig(path, "anonymous")
	if err != nil || cfg.BearerToken != "" || cfg.Exec != nil || cfg.CertFile != "" {
		t.Fatalf("anonymous: %+v %v", cfg, err)
	}
}

func TestLoadKubeconfigMergesKUBECONFIG(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	a := writeFile(t, filepath.Join(dirA, "a.yaml"), `
current-context: ctx-a
clusters:
- name: shared
  cluster: {server: "https://a.example"}
contexts:
- name: ctx-a
  context: {cluster: shared, user: u}
- name: ctx-b
  context: {cluster: shared, user: u, namespace: from-a}
`)
	b := writeFile(t, filepath.Join(dirB, "b.yaml"), `
current-context: ctx-b
clusters:
- name: shared
  cluster: {server: "https://b.example"}
contexts:
- name: ctx-b
  context: {cluster: shared, user: u, namespace: from-b}
users:
- name: u
  user: {client-certificate: c.crt, client-key: c.key}
`)
	missing := filepath.Join(t.TempDir(), "nope")
	t.Setenv("KUBECONFIG", strings.Join([]string{missing, a, "", b}, string(os.PathListSeparator)))

	cfg, err := LoadKubeconfig("", "")
	if err != nil {
		t.Fatal(err)
	}
	// current-context, the cluster and ctx-b come from the first file that
	// has them; the user only exists in b, with paths relative to b.
	if cfg.Host != "https://a.example" || cfg.CertFile != filepath.Join(dirB, "c.crt") || cfg.KeyFile != filepath.Join(dirB, "c.key") {
		t.Fatalf("merged ctx-a: %+v", cfg)
	}
	cfg, err = LoadKubeconfig("", "ctx-b")
	if err != nil || cfg.Namespace != "from-a" {
		t.Fatalf("merged ctx-b: %+v %v", cfg, err)
	}

	// Reversed order: b wins.
	t.Setenv("KUBECONFIG", b+string(os.PathListSeparator)+a)
	cfg, err = LoadKubeconfig("", "")
	if err != nil || cfg.Host != "https://b.example" || cfg.Namespace != "from-b" {
		t.Fatalf("reversed: %+v %v", cfg, err)
	}

	// Every listed file missing is an error.
	t.Setenv("KUBECONFIG", missing)
	if _, err := LoadKubeconfig("", ""); !errors.Is(err, ErrConfig) {
		t.Fatalf("all missing: %v", err)
	}
}

func TestLoadKubeconfigDefaultsToHome(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".kube", "config"), fullKubeconfig)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", home)
	cfg, err := LoadKubeconfig("", "data")
	if err != nil || cfg.BearerToken != "secret-token" {
		t.Fatalf("%+v %v", cfg, err)
	}
}

func TestLoadKubeconfigErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good"), fullKubeconfig)
	cases := map[string]struct{ content, context string }{
		"not yaml":         {"clusters: [", ""},
		"wrong shape":      {"clusters: 7", ""},
		"no current":       {"clusters: []", ""},
		"unknown context":  {fullKubeconfig, "nope"},
		"unknown cluster":  {"contexts: [{name: c, context: {cluster: x}}]", "c"},
		"unknown user":     {"clusters: [{name: x, cluster: {server: https://h}}]\ncontexts: [{name: c, context: {cluster: x, user: u}}]", "c"},
		"no server":        {"clusters: [{name: x, cluster: {}}]\ncontexts: [{name: c, context: {cluster: x}}]", "c"},
		"bad scheme":       {"clusters: [{name: x, cluster: {server: 'ftp://h'}}]\ncontexts: [{name: c, context: {cluster: x}}]", "c"},
		"bad base64":       {"clusters: [{name: x, cluster: {server: https://h, certificate-authority-data: '!!!'}}]\ncontexts: [{name: c, context: {cluster: x}}]", "c"},
		"insecure with CA": {"clusters: [{name: x, cluster: {server: https://h, insecure-skip-tls-verify: true, certificate-authority: ca}}]\ncontexts: [{name: c, context: {cluster: x}}]", "c"},
		"cert without key": {"clusters: [{name: x, cluster: {server: https://h}}]\nusers: [{name: u, user: {client-certificate: c}}]\ncontexts: [{name: c, context: {cluster: x, user: u}}]", "c"},
		"exec without cmd": {"clusters: [{name: x, cluster: {server: https://h}}]\nusers: [{name: u, user: {exec: {apiVersion: v}}}]\ncontexts: [{name: c, context: {cluster: x, user: u}}]", "c"},
	}
	for name, tc := range cases {
		path := writeFile(t, filepath.Join(dir, strings.ReplaceAll(name, " ", "-")), tc.content)
		if _, err := LoadKubeconfig(path, tc.context); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	if _, err := LoadKubeconfig(filepath.Join(dir, "missing"), ""); !errors.Is(err, ErrConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadKubeconfig(good, ""); err != nil {
		t.Errorf("good file: %v", err)
	}
}

// A kubeconfig made from a running server's CA and a token works end to end.
func TestKubeconfigAgainstServer(t *testing.T) {
	api := newFakeAPI()
	api.token = "kc-token"
	srv := startTLS(t, api)
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "config"), `
current-context: test
clusters:
- name: test
  cluster:
    server: `+srv.URL+`
    certificate-authority-data: `+base64.StdEncoding.EncodeToString(caPEM(srv))+`
users:
- name: test
  user: {token: kc-token}
contexts:
- name: test
  context: {cluster: test, user: test}
`)
	cfg, err := LoadKubeconfig(path, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if _, err := c.Do(ctxT(t), "GET", "/api/v1/configmaps", nil, nil); err != nil {
		t.Fatal(err)
	}
}

func FuzzLoadKubeconfig(f *testing.F) {
	f.Add([]byte(fullKubeconfig), "")
	f.Add([]byte(fullKubeconfig), "exec")
	f.Add([]byte(fullKubeconfig), "data")
	f.Add([]byte("current-context: c\ncontexts: [{name: c, context: {cluster: x}}]\nclusters: [{name: x, cluster: {server: h:1}}]"), "")
	f.Add([]byte("{}"), "")
	f.Add([]byte("clusters: [{name: x, cluster: {server: https://h, certificate-authority-data: 'QQ=='}}]\ncontexts: [{name: c, context: {cluster: x}}]"), "c")
	f.Add([]byte("- a\n- b"), "")
	f.Add([]byte("&a [*a]"), "")
	f.Fuzz(func(t *testing.T, data []byte, context string) {
		cfg, err := parseKubeconfig(data, "/base", context)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		// A Config that loads is one New accepts the shape of.
		if _, err := parseHost(cfg.Host); err != nil {
			t.Fatalf("loaded host %q: %v", cfg.Host, err)
		}
		if err := cfg.validate(); err != nil {
			t.Fatalf("loaded config invalid: %v", err)
		}
		// Every file path is resolved against the kubeconfig's directory.
		for _, p := range []string{cfg.CAFile, cfg.CertFile, cfg.KeyFile, cfg.BearerTokenFile} {
			if p != "" && !filepath.IsAbs(p) {
				t.Fatalf("path %q left relative", p)
			}
		}
		// Loading is deterministic.
		again, err := parseKubeconfig(data, "/base", context)
		if err != nil || !reflect.DeepEqual(cfg, again) {
			t.Fatalf("second load differs: %v", err)
		}
	})
}
