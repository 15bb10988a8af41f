package client

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The kubeconfig document, as much of it as listwatch reads. A user that
// asks for what listwatch cannot do (basic auth, an auth-provider plugin)
// is an error when a context uses it, never silently dropped.
type kubeconfig struct {
	CurrentContext string         `yaml:"current-context"`
	Clusters       []namedCluster `yaml:"clusters"`
	Users          []namedUser    `yaml:"users"`
	Contexts       []namedContext `yaml:"contexts"`
}

type namedCluster struct {
	Name    string      `yaml:"name"`
	Cluster kubeCluster `yaml:"cluster"`
}

type kubeCluster struct {
	Server                   string `yaml:"server"`
	CertificateAuthority     string `yaml:"certificate-authority"`
	CertificateAuthorityData string `yaml:"certificate-authority-data"`
	InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
	TLSServerName            string `yaml:"tls-server-name"`
	ProxyURL                 string `yaml:"proxy-url"`
	DisableCompression       bool   `yaml:"disable-compression"`
}

type namedUser struct {
	Name string   `yaml:"name"`
	User kubeUser `yaml:"user"`
}

type kubeUser struct {
	Token                 string    `yaml:"token"`
	TokenFile             string    `yaml:"tokenFile"`
	ClientCertificate     string    `yaml:"client-certificate"`
	ClientCertificateData string    `yaml:"client-certificate-data"`
	ClientKey             string    `yaml:"client-key"`
	ClientKeyData         string    `yaml:"client-key-data"`
	Exec                  *kubeExec `yaml:"exec"`

	As          string              `yaml:"as"`
	AsUID       string              `yaml:"as-uid"`
	AsGroups    []string            `yaml:"as-groups"`
	AsUserExtra map[string][]string `yaml:"as-user-extra"`

	// Not supported: an error when set.
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	AuthProvider *struct {
		Name string `yaml:"name"`
	} `yaml:"auth-provider"`
}

type kubeExec struct {
	APIVersion         string       `yaml:"apiVersion"`
	Command            string       `yaml:"command"`
	Args               []string     `yaml:"args"`
	Env                []ExecEnvVar `yaml:"env"`
	InstallHint        string       `yaml:"installHint"`
	ProvideClusterInfo bool         `yaml:"provideClusterInfo"`
	InteractiveMode    string       `yaml:"interactiveMode"`
}

type namedContext struct {
	Name    string      `yaml:"name"`
	Context kubeContext `yaml:"context"`
}

type kubeContext struct {
	Cluster   string `yaml:"cluster"`
	User      string `yaml:"user"`
	Namespace string `yaml:"namespace"`
}

// mergedKubeconfig is several kubeconfig files merged the way kubectl
// merges $KUBECONFIG: for every cluster, user and context name, and for
// current-context, the first file that sets it wins. File paths are
// already resolved against the directory of the file they came from.
type mergedKubeconfig struct {
	currentContext string
	clusters       map[string]kubeCluster
	users          map[string]kubeUser
	contexts       map[string]kubeContext
}

// LoadKubeconfig reads a kubeconfig and returns the Config of one of its
// contexts.
//
// path "" looks where controller-runtime's GetConfig looks, in order:
//
//  1. $KUBECONFIG, when set: a list of files separated by the OS list
//     separator (':' on Unix) merged first-wins as kubectl does (missing
//     files in the list are skipped);
//  2. else, when context is "" too, the pod's service account
//     (InClusterConfig), if $KUBERNETES_SERVICE_HOST and
//     $KUBERNETES_SERVICE_PORT are set and its token and CA can be read;
//  3. else ~/.kube/config.
//
// (controller-runtime also takes the service account when a context is
// named; a named context is taken here to mean a kubeconfig is wanted.)
//
// context "" means the current-context. Relative file paths in the
// kubeconfig (certificates, keys, token files, exec commands containing a
// separator) are resolved against the directory of the file that names
// them.
func LoadKubeconfig(path, context string) (*Config, error) {
	return loadKubeconfig(path, context, osEnv)
}

// kubeconfigEnv is what LoadKubeconfig reads besides the files it is
// given, replaced in tests.
type kubeconfigEnv struct {
	getenv func(string) string
	home   func() (string, error)
	saDir  string // ServiceAccountDir
}

var osEnv = kubeconfigEnv{getenv: os.Getenv, home: os.UserHomeDir, saDir: ServiceAccountDir}

func loadKubeconfig(path, context string, env kubeconfigEnv) (*Config, error) {
	var inClusterErr error
	if path == "" && context == "" && env.getenv("KUBECONFIG") == "" {
		cfg, err := inClusterConfig(env.saDir, env.getenv)
		if err == nil {
			return cfg, nil
		}
		inClusterErr = err
	}
	paths, explicit, err := kubeconfigPaths(path, env)
	if err != nil {
		return nil, err
	}
	m := newMergedKubeconfig()
	found := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			if !explicit && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if inClusterErr != nil && !errors.Is(inClusterErr, ErrNotInCluster) {
				return nil, fmt.Errorf("%w: kubeconfig: %w (in-cluster: %w)", ErrConfig, err, inClusterErr)
			}
			return nil, fmt.Errorf("%w: kubeconfig: %w", ErrConfig, err)
		}
		if err := m.add(data, filepath.Dir(p)); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		found++
	}
	if found == 0 {
		return nil, fmt.Errorf("%w: kubeconfig: none of %q exists", ErrConfig, paths)
	}
	return m.config(context)
}

func kubeconfigPaths(path string, env kubeconfigEnv) (paths []string, explicit bool, err error) {
	if path != "" {
		return []string{path}, true, nil
	}
	if list := env.getenv("KUBECONFIG"); list != "" {
		seen := map[string]bool{}
		for _, p := range filepath.SplitList(list) {
			if p != "" && !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
		if len(paths) > 0 {
			return paths, false, nil
		}
	}
	home, err := env.home()
	if err != nil {
		return nil, false, fmt.Errorf("%w: kubeconfig: %w", ErrConfig, err)
	}
	return []string{filepath.Join(home, ".kube", "config")}, true, nil
}

// parseKubeconfig is LoadKubeconfig for one document held in memory, with
// relative paths resolved against dir. It touches no file.
func parseKubeconfig(data []byte, dir, context string) (*Config, error) {
	m := newMergedKubeconfig()
	if err := m.add(data, dir); err != nil {
		return nil, err
	}
	return m.config(context)
}

func newMergedKubeconfig() *mergedKubeconfig {
	return &mergedKubeconfig{
		clusters: map[string]kubeCluster{},
		users:    map[string]kubeUser{},
		contexts: map[string]kubeContext{},
	}
}

func (m *mergedKubeconfig) add(data []byte, dir string) error {
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return fmt.Errorf("%w: kubeconfig: %w", ErrConfig, err)
	}
	if m.currentContext == "" {
		m.currentContext = kc.CurrentContext
	}
	for _, c := range kc.Clusters {
		if _, ok := m.clusters[c.Name]; !ok {
			c.Cluster.CertificateAuthority = resolvePath(dir, c.Cluster.CertificateAuthority)
			m.clusters[c.Name] = c.Cluster
		}
	}
	for _, u := range kc.Users {
		if _, ok := m.users[u.Name]; !ok {
			u.User.TokenFile = resolvePath(dir, u.User.TokenFile)
			u.User.ClientCertificate = resolvePath(dir, u.User.ClientCertificate)
			u.User.ClientKey = resolvePath(dir, u.User.ClientKey)
			if e := u.User.Exec; e != nil && strings.ContainsRune(e.Command, filepath.Separator) {
				e.Command = resolvePath(dir, e.Command)
			}
			m.users[u.Name] = u.User
		}
	}
	for _, c := range kc.Contexts {
		if _, ok := m.contexts[c.Name]; !ok {
			m.contexts[c.Name] = c.Context
		}
	}
	return nil
}

func resolvePath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

func (m *mergedKubeconfig) config(context string) (*Config, error) {
	if context == "" {
		context = m.currentContext
	}
	if context == "" {
		return nil, fmt.Errorf("%w: kubeconfig: no context given and current-context is not set", ErrConfig)
	}
	kctx, ok := m.contexts[context]
	if !ok {
		return nil, fmt.Errorf("%w: kubeconfig: context %q not found", ErrConfig, context)
	}
	cluster, ok := m.clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("%w: kubeconfig: cluster %q of context %q not found", ErrConfig, kctx.Cluster, context)
	}
	cfg := &Config{
		Host:       cluster.Server,
		CAFile:     cluster.CertificateAuthority,
		Insecure:   cluster.InsecureSkipTLSVerify,
		ServerName: cluster.TLSServerName,
		ProxyURL:   cluster.ProxyURL,
		Namespace:  kctx.Namespace,
	}
	if cluster.DisableCompression {
		cfg.Compression = CompressionNone
	}
	var err error
	if cfg.CAData, err = decodeBase64("certificate-authority-data", cluster.CertificateAuthorityData); err != nil {
		return nil, err
	}
	if kctx.User != "" {
		user, ok := m.users[kctx.User]
		if !ok {
			return nil, fmt.Errorf("%w: kubeconfig: user %q of context %q not found", ErrConfig, kctx.User, context)
		}
		if err := applyUser(cfg, user); err != nil {
			return nil, fmt.Errorf("kubeconfig: user %q: %w", kctx.User, err)
		}
	}
	if _, err := parseHost(cfg.Host); err != nil {
		return nil, fmt.Errorf("kubeconfig: cluster %q: %w", kctx.Cluster, err)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func applyUser(cfg *Config, u kubeUser) error {
	if u.Username != "" || u.Password != "" {
		return fmt.Errorf("%w: basic authentication (username and password) is not supported", ErrConfig)
	}
	if u.AuthProvider != nil {
		return fmt.Errorf("%w: auth-provider %q is not supported; use an exec credential plugin", ErrConfig, u.AuthProvider.Name)
	}
	if u.As != "" || u.AsUID != "" || len(u.AsGroups) > 0 || len(u.AsUserExtra) > 0 {
		cfg.Impersonate = Impersonate{User: u.As, UID: u.AsUID, Groups: u.AsGroups, Extra: u.AsUserExtra}
	}
	cfg.BearerToken = u.Token
	cfg.BearerTokenFile = u.TokenFile
	cfg.CertFile = u.ClientCertificate
	cfg.KeyFile = u.ClientKey
	var err error
	if cfg.CertData, err = decodeBase64("client-certificate-data", u.ClientCertificateData); err != nil {
		return err
	}
	if cfg.KeyData, err = decodeBase64("client-key-data", u.ClientKeyData); err != nil {
		return err
	}
	if e := u.Exec; e != nil {
		if e.Command == "" {
			return fmt.Errorf("%w: kubeconfig: exec: command is empty", ErrConfig)
		}
		cfg.Exec = &ExecConfig{
			APIVersion:         e.APIVersion,
			Command:            e.Command,
			Args:               e.Args,
			Env:                e.Env,
			InstallHint:        e.InstallHint,
			ProvideClusterInfo: e.ProvideClusterInfo,
			InteractiveMode:    e.InteractiveMode,
		}
	}
	return nil
}

func decodeBase64(field, s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%w: kubeconfig: %s: %w", ErrConfig, field, err)
	}
	return b, nil
}
