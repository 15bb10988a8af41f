package client

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pluginScript is a credential plugin: it counts its runs, records its
// arguments and KUBERNETES_EXEC_INFO, and prints $OUT_DIR/out.<run> if
// present, else $OUT_DIR/out.
const pluginScript = `#!/bin/sh
echo run >> "$OUT_DIR/count"
n=$(wc -l < "$OUT_DIR/count" | tr -d ' ')
printf '%s' "$KUBERNETES_EXEC_INFO" > "$OUT_DIR/info"
echo "$@" > "$OUT_DIR/args"
if [ -n "$FAIL" ]; then echo "plugin says no" >&2; exit 3; fi
if [ -f "$OUT_DIR/out.$n" ]; then cat "$OUT_DIR/out.$n"; else cat "$OUT_DIR/out"; fi
`

type plugin struct {
	dir string
	cfg *ExecConfig
}

func newPlugin(t *testing.T, apiVersion string) *plugin {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "plugin.sh")
	if err := os.WriteFile(script, []byte(pluginScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return &plugin{dir: dir, cfg: &ExecConfig{
		APIVersion: apiVersion, Command: script, Args: []string{"get-token", "--cluster=c1"},
		Env: []ExecEnvVar{{Name: "OUT_DIR", Value: dir}},
	}}
}

// output sets what run n prints (n == 0: every run without its own file).
func (p *plugin) output(t *testing.T, n int, status map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"apiVersion": p.cfg.APIVersion, "kind": "ExecCredential", "status": status})
	if err != nil {
		t.Fatal(err)
	}
	name := "out"
	if n > 0 {
		name = "out." + string(rune('0'+n))
	}
	if err := os.WriteFile(filepath.Join(p.dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (p *plugin) runs(t *testing.T) int {
	b, err := os.ReadFile(filepath.Join(p.dir, "count"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run")
}

func TestExecPluginTokenCachedUntilExpiry(t *testing.T) {
	api := newFakeAPI()
	api.token = "plugin-token"
	srv := startTLS(t, api)
	clk := newFakeClock(false)
	p := newPlugin(t, ExecAPIVersionV1)
	p.cfg.ProvideClusterInfo = true
	p.output(t, 0, map[string]any{"token": "plugin-token", "expirationTimestamp": clk.Now().Add(time.Hour).Format(time.RFC3339)})
	c := newTestClientClock(t, srv, clk, func(cfg *Config) { cfg.Exec = p.cfg })

	for range 3 {
		if _, err := c.Do(ctxT(t), http.MethodGet, "/api/v1/configmaps", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.runs(t); n != 1 {
		t.Fatalf("plugin ran %d times for 3 requests, want 1 (cached)", n)
	}
	var info execCredential
	raw, _ := os.ReadFile(filepath.Join(p.dir, "info"))
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatalf("KUBERNETES_EXEC_INFO %s: %v", raw, err)
	}
	if info.APIVersion != ExecAPIVersionV1 || info.Kind != "ExecCredential" || info.Spec.Interactive ||
		info.Spec.Cluster == nil || info.Spec.Cluster.Server != srv.URL || len(info.Spec.Cluster.CertificateAuthorityData) == 0 {
		t.Fatalf("KUBERNETES_EXEC_INFO = %s", raw)
	}
	if args, _ := os.ReadFile(filepath.Join(p.dir, "args")); strings.TrimSpace(string(args)) != "get-token --cluster=c1" {
		t.Fatalf("args %q", args)
	}

	clk.Advance(2 * time.Hour) // past expirationTimestamp
	if _, err := c.Do(ctxT(t), http.MethodGet, "/api/v1/configmaps", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := p.runs(t); n != 2 {
		t.Fatalf("plugin ran %d times after expiry, want 2", n)
	}
}

func TestExecPluginRerunOn401(t *testing.T) {
	api := newFakeAPI()
	api.token = "second"
	srv := startTLS(t, api)
	p := newPlugin(t, ExecAPIVersionV1)
	p.output(t, 1, map[string]any{"token": "first"}) // no expiry: valid until a 401
	p.output(t, 0, map[string]any{"token": "second"})
	c := newTestClient(t, srv, func(cfg *Config) { cfg.Exec = p.cfg })

	// A POST (its body replayed) meets the 401, the plugin runs again and
	// the request is retried once with the new token.
	resp, err := c.Do(ctxT(t), http.MethodPost, "/api/v1/namespaces/ns/configmaps", nil, []byte(`{"metadata":{"name":"x"}}`))
	if err != nil {
		t.Fatalf("request after a 401: %v", err)
	}
	resp.Body.Close()
	if n := p.runs(t); n != 2 {
		t.Fatalf("plugin ran %d times, want 2", n)
	}
	seen := api.seen()
	if len(seen) != 2 || seen[0].header.Get("Authorization") != "Bearer first" || string(seen[1].body) != `{"metadata":{"name":"x"}}` {
		t.Fatalf("requests: %+v", seen)
	}
	if _, err := c.Do(ctxT(t), http.MethodGet, "/api/v1/namespaces/ns/configmaps/x", nil, nil); err != nil || p.runs(t) != 2 {
		t.Fatalf("cached token not reused: %v, %d runs", err, p.runs(t))
	}

	// A plugin that keeps giving a rejected token yields Unauthorized.
	api.mu.Lock()
	api.token = "never"
	api.mu.Unlock()
	if _, err := c.Do(ctxT(t), http.MethodGet, "/api/v1/configmaps", nil, nil); !IsUnauthorized(err) {
		t.Fatalf("rejected token: %v, want Unauthorized", err)
	}
}

func TestExecPluginClientCertificate(t *testing.T) {
	ca := newCert(t, "ca", nil)
	leaf := newCert(t, "exec-user", ca)
	srv := startMTLS(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.TLS.PeerCertificates[0].Subject.CommonName))
	}))
	p := newPlugin(t, ExecAPIVersionV1beta1)
	p.output(t, 0, map[string]any{"clientCertificateData": string(leaf.certPEM), "clientKeyData": string(leaf.keyPEM)})
	c := newTestClient(t, srv, func(cfg *Config) { cfg.Exec = p.cfg })
	resp, err := c.Do(ctxT(t), http.MethodGet, "/whoami", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "exec-user" {
		t.Fatalf("server saw %q", b)
	}
}

func TestExecPluginErrors(t *testing.T) {
	srv := startTLS(t, newFakeAPI())
	get := func(cfg *ExecConfig) error {
		c, err := newClient(&Config{Host: srv.URL, CAData: caPEM(srv), Exec: cfg}, realClock{})
		if err != nil {
			return err
		}
		defer c.CloseIdleConnections()
		_, err = c.Do(ctxT(t), http.MethodGet, "/api/v1/configmaps", nil, nil)
		return err
	}

	p := newPlugin(t, ExecAPIVersionV1)
	p.cfg.Env = append(p.cfg.Env, ExecEnvVar{Name: "FAIL", Value: "1"})
	if err := get(p.cfg); !errors.Is(err, ErrExecPlugin) || !strings.Contains(err.Error(), "plugin says no") {
		t.Errorf("failing plugin: %v", err)
	}

	p = newPlugin(t, ExecAPIVersionV1)
	p.output(t, 0, map[string]any{"token": "x"})
	p.cfg.APIVersion = ExecAPIVersionV1beta1 // the output says v1
	if err := get(p.cfg); !errors.Is(err, ErrExecPlugin) {
		t.Errorf("version mismatch: %v", err)
	}

	p = newPlugin(t, ExecAPIVersionV1)
	p.output(t, 0, map[string]any{})
	if err := get(p.cfg); !errors.Is(err, ErrExecPlugin) {
		t.Errorf("empty status: %v", err)
	}

	missing := &ExecConfig{Command: filepath.Join(t.TempDir(), "nope"), InstallHint: "brew install nope"}
	if err := get(missing); !errors.Is(err, ErrExecPlugin) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing command: %v", err)
	}
	missing = &ExecConfig{Command: "listwatch-no-such-plugin", InstallHint: "brew install nope"}
	if err := get(missing); !errors.Is(err, ErrExecPlugin) || !strings.Contains(err.Error(), "brew install nope") {
		t.Errorf("command not in PATH: %v", err)
	}

	if err := get(&ExecConfig{Command: "x", InteractiveMode: "Always"}); !errors.Is(err, ErrExecPlugin) {
		t.Errorf("interactiveMode Always: %v", err)
	}
	if err := get(&ExecConfig{Command: "x", APIVersion: "client.authentication.k8s.io/v1alpha1"}); !errors.Is(err, ErrExecPlugin) {
		t.Errorf("v1alpha1: %v", err)
	}
}
