package client

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// Defaults applied by New to zero fields of Config.
const (
	// DefaultQPS and DefaultBurst match client-go's rest.Config defaults.
	DefaultQPS   float32 = 5
	DefaultBurst int     = 10
)

// Version is the listwatch version sent in the default User-Agent.
// Builds may override it with -ldflags "-X".
var Version = "v0.1.0-dev"

// Config says where an API server is and how to authenticate to it. Build
// one by hand, with LoadKubeconfig, InClusterConfig or ConfigFromURL.
//
// Zero values are meaningful: every field documents what its zero value
// does. A Config is read by New and not retained afterwards except for the
// file names, which are re-read as documented.
type Config struct {
	// Host is the server's base URL, "https://host:port" (a bare
	// "host:port" is taken as https). A path prefix is kept.
	Host string

	// CAData (PEM) or CAFile verify the server's certificate. Neither set:
	// the system roots. CAData wins over CAFile. CAFile is read by New and
	// again at most every 5 minutes, on a request, as client-go does since
	// 1.36 (ClientsAllowCARotation): when its content changed and holds a
	// certificate, new connections trust it (idle ones are closed; open
	// ones, such as watches, run on). An empty CAFile trusts nothing, not
	// the system roots.
	CAData []byte
	CAFile string
	// CertData/KeyData (PEM) or CertFile/KeyFile present a client
	// certificate. Data wins over files.
	CertData, KeyData []byte
	CertFile, KeyFile string
	// Insecure skips verification of the server's certificate. It is an
	// error together with CAData or CAFile, as in kubectl.
	Insecure bool
	// ServerName overrides the name checked in the server's certificate
	// (and sent as SNI). Empty: the host of Host.
	ServerName string

	// BearerToken is sent as "Authorization: Bearer <token>".
	BearerToken string
	// BearerTokenFile, when set, wins over BearerToken; the file is
	// re-read at most once a minute, because projected service account
	// tokens rotate.
	BearerTokenFile string
	// Exec runs a credential plugin for tokens or client certificates.
	// It wins over the bearer token fields.
	Exec *ExecConfig
	// Impersonate, when its User is set, makes every request act as that
	// user (kubectl's --as, a kubeconfig user's "as" fields): the
	// credentials above must be allowed to impersonate it.
	Impersonate Impersonate

	// ProxyURL, when set, sends every request through this proxy: an
	// http, https or socks5 URL, as a kubeconfig cluster's proxy-url.
	// Empty: the proxy the environment names ($HTTPS_PROXY, $NO_PROXY, ...).
	ProxyURL string

	// QPS and Burst size the client-side token bucket every request waits
	// on. Zero: DefaultQPS and DefaultBurst. A negative QPS disables rate
	// limiting.
	QPS   float32
	Burst int
	// Timeout bounds each non-watch request, from sending it to reading
	// its body (including the body read by the caller of Do). Zero: no
	// timeout. Watches are bounded only by their context and by the
	// server's timeoutSeconds.
	Timeout time.Duration
	// DisableProtobuf makes every Resource ask for and send JSON only. By
	// default a Resource of a type with protobuf methods (any k8s.io/api
	// type) asks for protobuf, as client-go does, and takes JSON when the
	// server answers JSON.
	DisableProtobuf bool
	// UserAgent is sent with every request. Empty: DefaultUserAgent(),
	// "<program>/<Version> (<GOOS>/<GOARCH>) listwatch". kube-apiserver
	// takes the part before the first "/" as the field manager of writes
	// that name none.
	UserAgent string

	// Namespace is the default namespace of the kubeconfig context or of
	// the pod's service account; informational, New does not use it.
	Namespace string
	// Logger receives one debug record per request, and the server's
	// warnings unless WarningHandler is set. Nil: slog.Default().
	Logger *slog.Logger
	// WarningHandler receives the text of every warning the server sends
	// in a "Warning: 299 - ..." header (deprecated APIs, fields dropped or
	// unknown under fieldValidation=Warn, admission warnings), for every
	// request: lists and each of their pages, watches, writes, errors. It
	// may be called from several goroutines at once. Nil: each distinct
	// text is logged once per Client at Warn level on Logger, so that a
	// controller's repeated requests do not repeat a deprecation notice
	// (client-go logs every one by default; kubectl deduplicates as this
	// does). A func that does nothing silences warnings.
	WarningHandler func(text string)

	// Compression says whether responses are asked for in gzip. The zero
	// value, CompressionAuto, asks unless Host is a loopback address.
	Compression Compression

	// WrapTransport, if set, wraps the HTTP transport, as client-go's
	// rest.Config.WrapTransport does: every request the Client sends
	// (lists, watches, writes, retries) passes through the RoundTripper it
	// returns, after authentication (bearer token, token file or exec
	// plugin) and impersonation have set their headers. Use it for tracing,
	// metrics or fault injection. It is called once, by New, with the base
	// transport, which asks for gzip and hands back bodies decoded (as an
	// *http.Transport does on its own), unless Compression says not to,
	// over an *http.Transport, or, with a CAFile, over a RoundTripper that
	// moves to a new one when the CA file rotates. The RoundTripper it
	// returns must be safe for concurrent use and must not modify the
	// requests it is given.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// Impersonate is the user every request acts as, sent in kube's
// Impersonate-User, Impersonate-Uid, Impersonate-Group and
// Impersonate-Extra-<key> headers (the key %-escaped as client-go does).
// UID, Groups and Extra need User.
type Impersonate struct {
	User   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// clone is a deep copy: a Config is not retained after New.
func (i *Impersonate) clone() Impersonate {
	c := Impersonate{User: i.User, UID: i.UID, Groups: slices.Clone(i.Groups)}
	if i.Extra != nil {
		c.Extra = make(map[string][]string, len(i.Extra))
		for k, v := range i.Extra {
			c.Extra[k] = slices.Clone(v)
		}
	}
	return c
}

func (i *Impersonate) isSet() bool {
	return i.User != "" || i.UID != "" || len(i.Groups) > 0 || len(i.Extra) > 0
}

// ErrConfig is wrapped by every error about an invalid Config or
// kubeconfig.
var ErrConfig = errors.New("client: invalid config")

// ConfigFromURL is the Config of a server at rawURL authenticated with a
// bearer token (empty: none). Use it for tests and for listwatch serve's
// plain-HTTP mode.
func ConfigFromURL(rawURL, token string) (*Config, error) {
	if _, err := parseHost(rawURL); err != nil {
		return nil, err
	}
	return &Config{Host: rawURL, BearerToken: token}, nil
}

// parseHost turns Host into a base URL with no trailing slash.
func parseHost(host string) (*url.URL, error) {
	if host == "" {
		return nil, fmt.Errorf("%w: host is empty", ErrConfig)
	}
	u, err := url.Parse(host)
	if err != nil || u.Scheme == "" || u.Host == "" {
		// "host:port" parses with the host as scheme; retry as https.
		u2, err2 := url.Parse("https://" + host)
		if err2 != nil || u2.Host == "" {
			return nil, fmt.Errorf("%w: host %q is not a URL", ErrConfig, host)
		}
		u = u2
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: host %q: scheme must be http or https", ErrConfig, host)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: host %q must not have a query or fragment", ErrConfig, host)
	}
	for len(u.Path) > 0 && u.Path[len(u.Path)-1] == '/' {
		u.Path = u.Path[:len(u.Path)-1]
	}
	u.RawPath = ""
	return u, nil
}

func (c *Config) validate() error {
	if c.Insecure && (len(c.CAData) > 0 || c.CAFile != "") {
		return fmt.Errorf("%w: specifying a root certificates file with the insecure flag is not allowed", ErrConfig)
	}
	hasCert := len(c.CertData) > 0 || c.CertFile != ""
	hasKey := len(c.KeyData) > 0 || c.KeyFile != ""
	if hasCert != hasKey {
		return fmt.Errorf("%w: client certificate and key must be given together", ErrConfig)
	}
	if c.Burst < 0 {
		return fmt.Errorf("%w: burst %d is negative", ErrConfig, c.Burst)
	}
	if c.Compression < CompressionAuto || c.Compression > CompressionNone {
		return fmt.Errorf("%w: unknown %v", ErrConfig, c.Compression)
	}
	if c.Impersonate.isSet() && c.Impersonate.User == "" {
		return fmt.Errorf("%w: impersonating a uid, groups or extra needs a user to impersonate", ErrConfig)
	}
	if _, err := parseProxyURL(c.ProxyURL); err != nil {
		return err
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: timeout %v is negative", ErrConfig, c.Timeout)
	}
	return nil
}

// parseProxyURL checks a proxy URL as clientcmd does; "" is nil.
func parseProxyURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: proxy URL %q does not parse", ErrConfig, raw)
	}
	switch u.Scheme {
	case "http", "https", "socks5":
		return u, nil
	}
	return nil, fmt.Errorf("%w: proxy URL %q: unsupported scheme %q, must be http, https, or socks5", ErrConfig, raw, u.Scheme)
}
