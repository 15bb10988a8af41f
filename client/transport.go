package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// newTransport builds the http.Transport a Client uses: TLS from the
// Config (ca is the CA it trusts, read by caData), HTTP/2 when the server
// offers it over TLS, the proxy, and connection pooling sized for many
// concurrent watches.
func newTransport(cfg *Config, ca []byte, exec *execProvider) (*http.Transport, error) {
	tlsConf, err := tlsConfig(cfg, ca, exec)
	if err != nil {
		return nil, err
	}
	proxy := http.ProxyFromEnvironment
	if u, err := parseProxyURL(cfg.ProxyURL); err != nil {
		return nil, err
	} else if u != nil {
		proxy = http.ProxyURL(u)
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               proxy,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: 10 * time.Second,
		// gzip is asked for, and decoded, by gzipTransport above this, or
		// not at all (Config.Compression).
		DisableCompression: true,
		// A custom TLSClientConfig turns HTTP/2 off unless asked for.
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}, nil
}

// caData is the PEM the Client trusts: CAData, else CAFile's content
// (nil when neither is set).
func caData(cfg *Config) ([]byte, error) {
	if len(cfg.CAData) > 0 || cfg.CAFile == "" {
		return cfg.CAData, nil
	}
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("%w: CA file: %w", ErrConfig, err)
	}
	return ca, nil
}

func tlsConfig(cfg *Config, ca []byte, exec *execProvider) (*tls.Config, error) {
	conf := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: cfg.Insecure, //nolint:gosec // the user asked for it
		ServerName:         cfg.ServerName,
	}
	switch {
	case len(ca) > 0:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%w: CA data holds no PEM certificate", ErrConfig)
		}
		conf.RootCAs = pool
	case cfg.CAFile != "":
		// An empty CA file trusts nothing until it is filled, as in
		// client-go 1.36+, rather than the system roots.
		conf.RootCAs = x509.NewCertPool()
	}
	static, err := staticClientCert(cfg)
	if err != nil {
		return nil, err
	}
	if exec == nil {
		if static != nil {
			conf.Certificates = []tls.Certificate{*static}
		}
		return conf, nil
	}
	// With a plugin the certificate is chosen per handshake: the plugin's
	// if it gave one, else the static one, else none.
	conf.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		cred, err := exec.get(cri.Context())
		if err != nil {
			return nil, err
		}
		if cred.cert != nil {
			return cred.cert, nil
		}
		if static != nil {
			return static, nil
		}
		return &tls.Certificate{}, nil
	}
	return conf, nil
}

func staticClientCert(cfg *Config) (*tls.Certificate, error) {
	certPEM, keyPEM := cfg.CertData, cfg.KeyData
	var err error
	if len(certPEM) == 0 && cfg.CertFile != "" {
		if certPEM, err = os.ReadFile(cfg.CertFile); err != nil {
			return nil, fmt.Errorf("%w: client certificate: %w", ErrConfig, err)
		}
	}
	if len(keyPEM) == 0 && cfg.KeyFile != "" {
		if keyPEM, err = os.ReadFile(cfg.KeyFile); err != nil {
			return nil, fmt.Errorf("%w: client key: %w", ErrConfig, err)
		}
	}
	if len(certPEM) == 0 {
		return nil, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: client certificate: %w", ErrConfig, err)
	}
	return &cert, nil
}

// authTransport adds the Authorization header and the User-Agent. With an
// exec plugin, a 401 drops the cached credential and, when the request
// body can be replayed, retries once with a fresh one.
type authTransport struct {
	base        http.RoundTripper
	userAgent   string
	impersonate Impersonate   // none unless User is set
	static      string        // bearer token; "" for none
	file        *tokenFile    // nil unless BearerTokenFile is set
	exec        *execProvider // nil unless Exec is set
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.exec == nil {
		tok := t.static
		if t.file != nil {
			var err error
			if tok, err = t.file.token(); err != nil {
				return nil, err
			}
		}
		return t.base.RoundTrip(t.prepare(req, tok))
	}
	cred, err := t.exec.get(req.Context())
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(t.prepare(req, cred.token))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	t.exec.invalidate(cred)
	if req.Body != nil && req.GetBody == nil {
		return resp, nil
	}
	fresh, err := t.exec.get(req.Context())
	if err != nil || fresh == cred {
		return resp, nil
	}
	retry := req
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil
		}
		retry = req.Clone(req.Context())
		retry.Body = body
	}
	_ = drainClose(resp.Body)
	if fresh.cert != nil && fresh.cert != cred.cert && t.exec.onNewCert != nil {
		// The connection that carried the 401 went back to the pool
		// just now, still authenticated with the old certificate.
		t.exec.onNewCert()
	}
	return t.base.RoundTrip(t.prepare(retry, fresh.token))
}

// prepare returns a copy of req with the headers set; a RoundTripper must
// not change the request it was given.
func (t *authTransport) prepare(req *http.Request, token string) *http.Request {
	r := req.Clone(req.Context())
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.userAgent)
	}
	if token != "" && r.Header.Get("Authorization") == "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	setImpersonation(r.Header, &t.impersonate)
	return r
}

// setImpersonation sets kube's impersonation headers for imp, unless the
// request already names a user to impersonate, as client-go's
// impersonatingRoundTripper does.
func setImpersonation(h http.Header, imp *Impersonate) {
	if imp.User == "" || h.Get("Impersonate-User") != "" {
		return
	}
	h.Set("Impersonate-User", imp.User)
	if imp.UID != "" {
		h.Set("Impersonate-Uid", imp.UID)
	}
	for _, g := range imp.Groups {
		h.Add("Impersonate-Group", g)
	}
	for k, vs := range imp.Extra {
		for _, v := range vs {
			h.Add("Impersonate-Extra-"+headerKeyEscape(k), v)
		}
	}
}

// headerKeyEscape %-encodes every byte of an extra's key that may not
// appear in a header name (RFC 7230 token characters), and '%' itself, as
// client-go does; kube-apiserver unescapes it.
func headerKeyEscape(key string) string {
	var b strings.Builder
	for i := range len(key) {
		c := key[i]
		if c == '%' || !isTokenByte(c) {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// tokenFilePeriod is how long a token read from a file is used before the
// file is read again; client-go uses the same minute.
const tokenFilePeriod = time.Minute

// tokenFile is a bearer token read from a file and cached for
// tokenFilePeriod.
type tokenFile struct {
	path  string
	clock clock

	mu     sync.Mutex // guards tok and readAt
	tok    string     // last token read; "" before the first read
	readAt time.Time
}

func newTokenFile(path, initial string, clk clock) *tokenFile {
	f := &tokenFile{path: path, clock: clk, tok: initial}
	if initial != "" {
		f.readAt = clk.Now()
	}
	return f
}

// token returns the cached token, re-reading the file when the cache is
// older than tokenFilePeriod. A failed re-read keeps the old token: the
// file may be mid-rotation, and the server will say 401 if it is stale.
func (f *tokenFile) token() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	if f.tok != "" && now.Sub(f.readAt) < tokenFilePeriod {
		return f.tok, nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		if f.tok != "" {
			return f.tok, nil
		}
		return "", fmt.Errorf("%w: token file: %w", ErrConfig, err)
	}
	f.tok, f.readAt = strings.TrimSpace(string(b)), now
	return f.tok, nil
}
