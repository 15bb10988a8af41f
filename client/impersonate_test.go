package client

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sync"
	"testing"
)

// TestImpersonationHeaders: Config.Impersonate becomes kube's headers on
// every request, extra keys escaped as client-go escapes them, and a
// request that already names a user is left alone.
func TestImpersonationHeaders(t *testing.T) {
	seen := make(chan http.Header, 2)
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		_, _ = w.Write([]byte(`{}`))
	}))
	c := newTestClient(t, srv, func(cfg *Config) {
		cfg.BearerToken = "admin-token"
		cfg.Impersonate = Impersonate{User: "jane", UID: "42", Groups: []string{"dev", "ops"},
			Extra: map[string][]string{"scopes": {"a", "b"}, "example.com/team name%": {"x"}}}
	})
	if err := c.GetJSON(ctxT(t), "/", &struct{}{}); err != nil {
		t.Fatal(err)
	}
	h := <-seen
	for name, want := range map[string][]string{
		"Authorization":            {"Bearer admin-token"},
		"Impersonate-User":         {"jane"},
		"Impersonate-Uid":          {"42"},
		"Impersonate-Group":        {"dev", "ops"},
		"Impersonate-Extra-Scopes": {"a", "b"},
		"Impersonate-Extra-Example.com%2fteam%20name%25": {"x"},
	} {
		if got := h.Values(name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q, want %q (all: %v)", name, got, want, h)
		}
	}

	// A request that names its own user keeps it, and gets no groups.
	c2 := newTestClient(t, srv, func(cfg *Config) {
		cfg.Impersonate = Impersonate{User: "jane", Groups: []string{"dev"}}
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return rt }
	})
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, srv.URL, nil)
	req.Header.Set("Impersonate-User", "bob")
	resp, err := c2.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = drainClose(resp.Body)
	if h := <-seen; h.Get("Impersonate-User") != "bob" || h.Get("Impersonate-Group") != "" {
		t.Fatalf("own user: %v", h)
	}
}

func TestHeaderKeyEscape(t *testing.T) {
	for in, want := range map[string]string{
		"scopes":               "scopes",
		"example.com/key":      "example.com%2Fkey",
		"a b%c":                "a%20b%25c",
		"ünï":                  "%C3%BCn%C3%AF",
		"!#$&'*+-.^_`|~09AZaz": "!#$&'*+-.^_`|~09AZaz",
		`"(),/:;<=>?@[\]{}`:    "%22%28%29%2C%2F%3A%3B%3C%3D%3E%3F%40%5B%5C%5D%7B%7D",
	} {
		if got := headerKeyEscape(in); got != want {
			t.Errorf("headerKeyEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestKubeconfigImpersonationProxyAndRefusedAuth: a kubeconfig user's as
// fields and a cluster's proxy-url are loaded; what listwatch cannot do
// (basic auth, auth-provider) and what clientcmd refuses is an error, not
// ignored.
func TestKubeconfigImpersonationProxyAndRefusedAuth(t *testing.T) {
	const doc = `
clusters:
- name: proxied
  cluster: {server: "https://h.example", proxy-url: "socks5://127.0.0.1:1080"}
- name: bad-proxy
  cluster: {server: "https://h.example", proxy-url: "ftp://p.example"}
users:
- name: as
  user:
    token: admin
    as: jane
    as-uid: "42"
    as-groups: [dev, ops]
    as-user-extra: {scopes: [a, b]}
- name: groups-only
  user: {as-groups: [dev]}
- name: basic
  user: {username: u, password: p}
- name: provider
  user: {auth-provider: {name: oidc, config: {idp-issuer-url: "https://issuer"}}}
contexts:
- name: as
  context: {cluster: proxied, user: as}
- name: groups-only
  context: {cluster: proxied, user: groups-only}
- name: basic
  context: {cluster: proxied, user: basic}
- name: provider
  context: {cluster: proxied, user: provider}
- name: bad-proxy
  context: {cluster: bad-proxy}
`
	cfg, err := parseKubeconfig([]byte(doc), "/base", "as")
	if err != nil {
		t.Fatal(err)
	}
	want := Impersonate{User: "jane", UID: "42", Groups: []string{"dev", "ops"}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	if !reflect.DeepEqual(cfg.Impersonate, want) || cfg.ProxyURL != "socks5://127.0.0.1:1080" || cfg.BearerToken != "admin" {
		t.Fatalf("loaded %+v", cfg)
	}
	c, err := newClient(cfg, realClock{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, "https://h.example/api", nil)
	if u, err := c.transport.(*http.Transport).Proxy(req); err != nil || u.String() != "socks5://127.0.0.1:1080" {
		t.Fatalf("proxy for a request: %v %v", u, err)
	}
	for _, ctx := range []string{"groups-only", "basic", "provider", "bad-proxy"} {
		if _, err := parseKubeconfig([]byte(doc), "/base", ctx); !errors.Is(err, ErrConfig) {
			t.Errorf("context %s: %v, want ErrConfig", ctx, err)
		}
	}
	// A user the context does not use may have anything.
	if _, err := parseKubeconfig([]byte(doc), "/base", "as"); err != nil {
		t.Fatal(err)
	}
}

// TestProxyURL: with ProxyURL set, requests go through that HTTP proxy
// (a CONNECT tunnel for https), loopback included, which the environment's
// proxy settings would skip.
func TestProxyURL(t *testing.T) {
	target := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	var mu sync.Mutex
	var tunnels []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		tunnels = append(tunnels, r.Host)
		mu.Unlock()
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		down, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			_ = up.Close()
			return
		}
		go func() { _, _ = io.Copy(up, buf); _ = up.Close() }()
		_, _ = io.Copy(down, up)
		_ = down.Close()
	}))
	t.Cleanup(proxy.Close)
	c := newTestClient(t, target, func(cfg *Config) { cfg.ProxyURL = proxy.URL })
	var out struct{ OK bool }
	if err := c.GetJSON(ctxT(t), "/", &out); err != nil || !out.OK {
		t.Fatalf("through the proxy: %v", err)
	}
	u, _ := url.Parse(target.URL)
	mu.Lock()
	defer mu.Unlock()
	if len(tunnels) != 1 || tunnels[0] != u.Host {
		t.Fatalf("tunnels %q, want one to %s", tunnels, u.Host)
	}
}
