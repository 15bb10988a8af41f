package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// maxRetries is how many times one request is retried before its last
// error is returned: client-go's default (rest.Request.maxRetries), so a
// request is sent at most 11 times.
const maxRetries = 10

// Client talks to one API server. It is safe for concurrent use; share one
// per server. It starts no goroutine of its own (the HTTP transport's
// connection goroutines end with their connections; CloseIdleConnections
// ends the idle ones).
type Client struct {
	base      *url.URL
	http      *http.Client
	transport baseTransport
	limiter   *rateLimiter
	timeout   time.Duration
	log       *slog.Logger
	clock     clock
	noProto   bool // Config.DisableProtobuf
	warnings  *warningHandler
}

// New builds a Client from cfg, reading any certificate files it names.
func New(cfg *Config) (*Client, error) {
	return newClient(cfg, realClock{})
}

func newClient(cfg *Config, clk clock) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	base, err := parseHost(cfg.Host)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ca, err := caData(cfg)
	if err != nil {
		return nil, err
	}
	var execP *execProvider
	if cfg.Exec != nil {
		var cluster *execCluster
		if cfg.Exec.ProvideClusterInfo {
			cluster = &execCluster{Server: cfg.Host, TLSServerName: cfg.ServerName,
				InsecureSkipTLSVerify: cfg.Insecure, CertificateAuthorityData: ca}
		}
		if execP, err = newExecProvider(*cfg.Exec, cluster, clk); err != nil {
			return nil, err
		}
	}
	tr, err := newTransport(cfg, ca, execP)
	if err != nil {
		return nil, err
	}
	var under baseTransport = tr
	if len(cfg.CAData) == 0 && cfg.CAFile != "" {
		under = newCARotation(cfg.CAFile, ca, tr, clk, log)
	}
	if execP != nil {
		execP.onNewCert = under.CloseIdleConnections
	}
	var rt http.RoundTripper = under
	if cfg.Compression.asks(base) {
		rt = gzipTransport{under}
	}
	if cfg.WrapTransport != nil {
		if rt = cfg.WrapTransport(rt); rt == nil {
			return nil, fmt.Errorf("%w: WrapTransport returned nil", ErrConfig)
		}
	}
	auth := &authTransport{base: rt, userAgent: cfg.UserAgent, static: cfg.BearerToken,
		exec: execP, impersonate: cfg.Impersonate.clone()}
	if auth.userAgent == "" {
		auth.userAgent = DefaultUserAgent()
	}
	if cfg.BearerTokenFile != "" {
		auth.file = newTokenFile(cfg.BearerTokenFile, cfg.BearerToken, clk)
	}
	return &Client{
		base:      base,
		http:      &http.Client{Transport: auth},
		transport: under,
		limiter:   newRateLimiter(cfg.QPS, cfg.Burst, clk),
		timeout:   cfg.Timeout,
		log:       log,
		clock:     clk,
		noProto:   cfg.DisableProtobuf,
		warnings:  &warningHandler{fn: cfg.WarningHandler, log: log},
	}, nil
}

// CloseIdleConnections closes pooled connections that carry no request.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// request is one call to the server.
type request struct {
	method      string
	path        string // under the base URL, starting with "/"
	query       url.Values
	body        []byte // nil: no body
	contentType string // of body; "" means application/json
	accept      string // "" means application/json
	watch       bool   // no Config.Timeout, no retries
}

// Do sends a request to path (under the Host's path) and returns the
// response of a 2xx answer, whose body the caller must close. Any other
// answer is returned as a *wire.Status error. A non-nil body is sent as
// application/json. Do waits on the rate limiter, applies Config.Timeout
// until the body is closed, and retries as client-go does (see retry.go).
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body []byte) (*http.Response, error) {
	return c.send(ctx, request{method: method, path: path, query: query, body: body})
}

// GetJSON GETs path and decodes the JSON answer into out; for discovery,
// /version and other documents.
func (c *Client) GetJSON(ctx context.Context, path string, out any) error {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: decoding %s: %w", path, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	var prev error // the error of the last attempt that was retried
	for attempt := 0; ; attempt++ {
		resp, retryAfter, err := c.attempt(ctx, r, attempt == maxRetries)
		if err == nil {
			return resp, nil
		}
		if retryAfter < 0 || attempt >= maxRetries {
			return nil, withPrevious(err, prev)
		}
		c.log.DebugContext(ctx, "retrying request", "method", r.method, "path", r.path,
			"after", retryAfter, "attempt", attempt+1, "error", err)
		prev = err
		if err := c.clock.Sleep(ctx, retryAfter); err != nil {
			return nil, withPrevious(err, prev)
		}
	}
}

// attempt sends r once. retryAfter >= 0 asks the caller to retry after
// that delay; the response has then been consumed. The warnings of the
// answer are handled unless it is to be retried (as client-go handles
// only the final answer's), last says no retry will follow.
func (c *Client) attempt(ctx context.Context, r request, last bool) (resp *http.Response, retryAfter time.Duration, err error) {
	if err := c.limiter.wait(ctx); err != nil {
		return nil, -1, err
	}
	cancel := context.CancelFunc(func() {})
	if c.timeout > 0 && !r.watch {
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	req, err := c.newHTTPRequest(ctx, r)
	if err != nil {
		cancel()
		return nil, -1, err
	}
	start := c.clock.Now()
	resp, err = c.http.Do(req)
	if err != nil {
		// Whether the caller's context or Config.Timeout ended the
		// attempt: asked before cancel, which ends ctx too, or every
		// failed attempt under a Timeout would look ended and a GET
		// whose connection dropped would not be retried.
		ended := ctx.Err() != nil
		cancel()
		c.log.DebugContext(ctx, "request failed", "method", r.method, "url", req.URL.String(), "error", err)
		if ended {
			return nil, -1, err
		}
		return nil, retryAfterError(r, err), err
	}
	c.log.DebugContext(ctx, "request", "method", r.method, "url", req.URL.String(),
		"status", resp.StatusCode, "proto", resp.Proto, "latency", c.clock.Now().Sub(start))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		c.warnings.handle(ctx, resp.Header)
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		return resp, -1, nil
	}
	defer cancel()
	defer resp.Body.Close()
	retryAfter = retryAfterResponse(resp)
	if retryAfter < 0 || last {
		c.warnings.handle(ctx, resp.Header)
	}
	return nil, retryAfter, statusError(resp)
}

func (c *Client) newHTTPRequest(ctx context.Context, r request) (*http.Request, error) {
	u := *c.base
	u.Path = c.base.Path + r.path
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	accept := r.accept
	if accept == "" {
		accept = acceptJSON
	}
	req.Header.Set("Accept", accept)
	if r.body != nil {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	return req, nil
}

// cancelOnClose ends a request's timeout context when its body is closed,
// so that Config.Timeout covers the caller's read of the body too.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
