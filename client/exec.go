package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Exec credential API versions understood by listwatch.
const (
	ExecAPIVersionV1      = "client.authentication.k8s.io/v1"
	ExecAPIVersionV1beta1 = "client.authentication.k8s.io/v1beta1"
)

// ExecConfig runs a credential plugin, kubectl's "exec" user stanza. The
// plugin prints an ExecCredential whose status holds a bearer token or a
// client certificate and key; listwatch caches it until its
// expirationTimestamp, and runs the plugin again when the server answers
// 401.
type ExecConfig struct {
	// APIVersion of the ExecCredential exchanged. Empty: ExecAPIVersionV1.
	APIVersion string
	// Command is run with Args and, on top of the process environment,
	// Env and KUBERNETES_EXEC_INFO. Standard input is not attached.
	Command string
	Args    []string
	Env     []ExecEnvVar
	// InstallHint is shown when Command cannot be found.
	InstallHint string
	// ProvideClusterInfo adds spec.cluster (server, CA, TLS settings) to
	// KUBERNETES_EXEC_INFO.
	ProvideClusterInfo bool
	// InteractiveMode is "Never", "IfAvailable" (empty means this) or
	// "Always". listwatch never gives the plugin a terminal, so "Always"
	// is refused.
	InteractiveMode string
}

// ExecEnvVar is one environment variable for a credential plugin.
type ExecEnvVar struct {
	Name  string `yaml:"name" json:"name"`
	Value string `yaml:"value" json:"value"`
}

// ErrExecPlugin is wrapped by every credential plugin failure.
var ErrExecPlugin = errors.New("client: exec credential plugin")

// execCluster is spec.cluster of KUBERNETES_EXEC_INFO.
type execCluster struct {
	Server                   string `json:"server"`
	TLSServerName            string `json:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify,omitempty"`
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
}

type execCredential struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster     *execCluster `json:"cluster,omitempty"`
		Interactive bool         `json:"interactive"`
	} `json:"spec"`
	Status *struct {
		ExpirationTimestamp   string `json:"expirationTimestamp,omitempty"`
		Token                 string `json:"token,omitempty"`
		ClientCertificateData string `json:"clientCertificateData,omitempty"`
		ClientKeyData         string `json:"clientKeyData,omitempty"`
	} `json:"status,omitempty"`
}

// execCred is one run's result. It is immutable once built, so a pointer
// to it identifies the run (see invalidate).
type execCred struct {
	token  string
	cert   *tls.Certificate // nil: the plugin gave a token
	expiry time.Time        // zero: valid until the server says 401
}

// execProvider runs the plugin and caches its credential.
type execProvider struct {
	cfg     ExecConfig
	cluster *execCluster // nil unless cfg.ProvideClusterInfo
	clock   clock
	// onNewCert is called after a run returns a different client
	// certificate, so that pooled connections made with the old one are
	// dropped.
	onNewCert func()

	// mu guards cred, and is held while the plugin runs so that
	// concurrent requests wait for a single run.
	mu   sync.Mutex
	cred *execCred // nil: the next get runs the plugin
}

func newExecProvider(cfg ExecConfig, cluster *execCluster, clk clock) (*execProvider, error) {
	switch cfg.APIVersion {
	case "":
		cfg.APIVersion = ExecAPIVersionV1
	case ExecAPIVersionV1, ExecAPIVersionV1beta1:
	default:
		return nil, fmt.Errorf("%w: unsupported apiVersion %q", ErrExecPlugin, cfg.APIVersion)
	}
	switch cfg.InteractiveMode {
	case "", "Never", "IfAvailable":
	case "Always":
		return nil, fmt.Errorf("%w: interactiveMode Always needs a terminal, which listwatch never provides", ErrExecPlugin)
	default:
		return nil, fmt.Errorf("%w: unknown interactiveMode %q", ErrExecPlugin, cfg.InteractiveMode)
	}
	if cfg.Command == "" {
		return nil, fmt.Errorf("%w: command is empty", ErrExecPlugin)
	}
	if !cfg.ProvideClusterInfo {
		cluster = nil
	}
	return &execProvider{cfg: cfg, cluster: cluster, clock: clk}, nil
}

// get returns a valid credential, running the plugin if none is cached or
// the cached one has expired.
func (p *execProvider) get(ctx context.Context) (*execCred, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.cred; c != nil && (c.expiry.IsZero() || p.clock.Now().Before(c.expiry)) {
		return c, nil
	}
	old := p.cred
	c, err := p.run(ctx)
	if err != nil {
		return nil, err
	}
	p.cred = c
	if c.cert != nil && (old == nil || old.cert == nil || !bytes.Equal(old.cert.Certificate[0], c.cert.Certificate[0])) && p.onNewCert != nil {
		p.onNewCert()
	}
	return c, nil
}

// invalidate forgets c if it is still the cached credential; a credential
// another request already replaced is left alone.
func (p *execProvider) invalidate(c *execCred) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cred == c {
		p.cred = nil
	}
}

func (p *execProvider) run(ctx context.Context) (*execCred, error) {
	var in execCredential
	in.APIVersion, in.Kind = p.cfg.APIVersion, "ExecCredential"
	in.Spec.Cluster = p.cluster
	info, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrExecPlugin, err)
	}
	cmd := exec.CommandContext(ctx, p.cfg.Command, p.cfg.Args...)
	cmd.Env = os.Environ()
	for _, e := range p.cfg.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.Env = append(cmd.Env, "KUBERNETES_EXEC_INFO="+string(info))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) && p.cfg.InstallHint != "" {
			return nil, fmt.Errorf("%w: %w\n%s", ErrExecPlugin, err, p.cfg.InstallHint)
		}
		return nil, fmt.Errorf("%w: %s: %w: %s", ErrExecPlugin, p.cfg.Command, err, strings.TrimSpace(stderr.String()))
	}
	return p.parse(stdout.Bytes())
}

func (p *execProvider) parse(out []byte) (*execCred, error) {
	var cred execCredential
	if err := json.Unmarshal(out, &cred); err != nil {
		return nil, fmt.Errorf("%w: decoding output: %w", ErrExecPlugin, err)
	}
	if cred.APIVersion != p.cfg.APIVersion || cred.Kind != "ExecCredential" {
		return nil, fmt.Errorf("%w: output is %s %s, want %s ExecCredential", ErrExecPlugin, cred.APIVersion, cred.Kind, p.cfg.APIVersion)
	}
	st := cred.Status
	if st == nil {
		return nil, fmt.Errorf("%w: output has no status", ErrExecPlugin)
	}
	c := &execCred{token: st.Token}
	if st.ExpirationTimestamp != "" {
		t, err := time.Parse(time.RFC3339, st.ExpirationTimestamp)
		if err != nil {
			return nil, fmt.Errorf("%w: expirationTimestamp: %w", ErrExecPlugin, err)
		}
		c.expiry = t
	}
	if (st.ClientCertificateData == "") != (st.ClientKeyData == "") {
		return nil, fmt.Errorf("%w: clientCertificateData and clientKeyData must be given together", ErrExecPlugin)
	}
	if st.ClientCertificateData != "" {
		cert, err := tls.X509KeyPair([]byte(st.ClientCertificateData), []byte(st.ClientKeyData))
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate: %w", ErrExecPlugin, err)
		}
		c.cert = &cert
	}
	if c.token == "" && c.cert == nil {
		return nil, fmt.Errorf("%w: status has neither token nor client certificate", ErrExecPlugin)
	}
	return c, nil
}
