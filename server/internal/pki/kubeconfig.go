package pki

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// Names inside the kubeconfig WriteKubeconfig writes.
const (
	KubeconfigCluster = "listwatch"
	KubeconfigUser    = "admin"
	KubeconfigContext = "listwatch"
)

// The subset of kubeconfig (clientcmd/api/v1) that we write. Field names
// are Kubernetes'; data fields are base64 of PEM, as kubectl expects.
type kubeconfig struct {
	APIVersion     string         `yaml:"apiVersion"`
	Kind           string         `yaml:"kind"`
	Clusters       []namedCluster `yaml:"clusters"`
	Users          []namedUser    `yaml:"users"`
	Contexts       []namedContext `yaml:"contexts"`
	CurrentContext string         `yaml:"current-context"`
	Preferences    struct{}       `yaml:"preferences"`
}

type namedCluster struct {
	Name    string `yaml:"name"`
	Cluster struct {
		Server                   string `yaml:"server"`
		CertificateAuthorityData string `yaml:"certificate-authority-data"`
	} `yaml:"cluster"`
}

type namedUser struct {
	Name string `yaml:"name"`
	User struct {
		Token                 string `yaml:"token,omitempty"`
		ClientCertificateData string `yaml:"client-certificate-data,omitempty"`
		ClientKeyData         string `yaml:"client-key-data,omitempty"`
	} `yaml:"user"`
}

type namedContext struct {
	Name    string `yaml:"name"`
	Context struct {
		Cluster string `yaml:"cluster"`
		User    string `yaml:"user"`
	} `yaml:"context"`
}

// WriteKubeconfig writes, atomically and 0600, a kubeconfig whose current
// context reaches server (an https URL) as admin. The user entry carries the
// token and the client certificate: clientcmd counts a client certificate
// as transport security rather than an "authentication method", so it
// accepts both, and kubectl sends both.
func WriteKubeconfig(path, server string, creds *Credentials) error {
	if creds == nil || len(creds.CAPEM) == 0 {
		return errors.New("pki: kubeconfig: no credentials")
	}
	b64 := base64.StdEncoding.EncodeToString
	var cl namedCluster
	cl.Name = KubeconfigCluster
	cl.Cluster.Server = server
	cl.Cluster.CertificateAuthorityData = b64(creds.CAPEM)
	var u namedUser
	u.Name = KubeconfigUser
	u.User.Token = creds.AdminToken
	if len(creds.AdminCertPEM) > 0 && len(creds.AdminKeyPEM) > 0 {
		u.User.ClientCertificateData = b64(creds.AdminCertPEM)
		u.User.ClientKeyData = b64(creds.AdminKeyPEM)
	}
	var cx namedContext
	cx.Name = KubeconfigContext
	cx.Context.Cluster = KubeconfigCluster
	cx.Context.User = KubeconfigUser
	doc := kubeconfig{
		APIVersion:     "v1",
		Kind:           "Config",
		Clusters:       []namedCluster{cl},
		Users:          []namedUser{u},
		Contexts:       []namedContext{cx},
		CurrentContext: KubeconfigContext,
	}
	data, err := yaml.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("pki: kubeconfig: %w", err)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("pki: kubeconfig: %w", err)
		}
	}
	return writeFileAtomic(path, data, 0o600)
}
