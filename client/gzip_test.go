package client

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGzipResponses: the client asked to (CompressionGzip; the server is
// on a loopback address) asks for gzip and hands back the decoded
// body (http.Transport does it); an encoding the caller chose is left
// alone; and a stream of gzip members, one per flush, written as serve
// writes a watch-list stream, is read member by member as each arrives,
// not once the stream ends (gzipTransport decodes it).
func TestGzipResponses(t *testing.T) {
	big := strings.Repeat("listwatch ", 50_000)
	next := make(chan struct{})
	var mu sync.Mutex
	var asked []string
	srv := startTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			_, _ = io.WriteString(w, big)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		// A member as serve and kube-apiserver write one on a watch:
		// its data sync-flushed, then closed, so that no data waits in
		// the final block for the next member.
		member := func(s string) {
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, s)
			_ = zw.Flush()
			_ = zw.Close()
			w.(http.Flusher).Flush()
		}
		if r.URL.Path != "/stream" {
			member(big)
			return
		}
		member("first\n")
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		member("second\n")
	}))
	ctx := ctxT(t)

	c := newTestClient(t, srv, func(cfg *Config) { cfg.Compression = CompressionGzip })
	resp, err := c.Do(ctx, http.MethodGet, "/big", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != big || resp.Header.Get("Content-Encoding") != "" || !resp.Uncompressed {
		t.Fatalf("%d bytes, %v, Content-Encoding %q, Uncompressed %v", len(body), err, resp.Header.Get("Content-Encoding"), resp.Uncompressed)
	}

	identity := newTestClient(t, srv, func(cfg *Config) {
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				r = r.Clone(r.Context())
				r.Header.Set("Accept-Encoding", "identity")
				return rt.RoundTrip(r)
			})
		}
	})
	resp, err = identity.Do(ctx, http.MethodGet, "/big", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != big || resp.Uncompressed {
		t.Fatalf("identity: %d bytes, %v, Uncompressed %v", len(body), err, resp.Uncompressed)
	}
	mu.Lock()
	if len(asked) != 2 || asked[0] != "gzip" || asked[1] != "identity" {
		t.Fatalf("Accept-Encoding sent: %q", asked)
	}
	mu.Unlock()

	resp, err = c.Do(ctx, http.MethodGet, "/stream", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	got := make(chan string, 1)
	go func() {
		l, _ := lines.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		if l != "first\n" {
			t.Fatalf("first member: %q", l)
		}
	case <-time.After(10 * time.Second): // bounds a failure only
		close(next)
		t.Fatal("the first member was not read before the second was sent")
	}
	close(next)
	rest, err := io.ReadAll(lines)
	if err != nil || !bytes.Equal(rest, []byte("second\n")) {
		t.Fatalf("second member: %q %v", rest, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestGzipTransportEdges: gzipTransport leaves the request it is given
// as it was; it does not ask for gzip on a HEAD, a Range or a request
// that names its own encoding, nor decode their answers; an answer that
// is not gzip, or has no body, passes as it came; a body that says gzip
// and is not fails its reads with the decoder's error; and Close ends a
// Read that waits for the body (a watch stopped).
func TestGzipTransportEdges(t *testing.T) {
	var sent []string
	answer := func(enc string, body io.ReadCloser) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent = append(sent, r.Header.Get("Accept-Encoding"))
			h := http.Header{}
			if enc != "" {
				h.Set("Content-Encoding", enc)
			}
			h.Set("Content-Length", "7")
			return &http.Response{StatusCode: 200, Header: h, Body: body, ContentLength: 7, Request: r}, nil
		})
	}
	req := func(method string, h ...string) *http.Request {
		r, _ := http.NewRequest(method, "https://127.0.0.1/x", nil)
		for i := 0; i+1 < len(h); i += 2 {
			r.Header.Set(h[i], h[i+1])
		}
		return r
	}
	for _, r := range []*http.Request{req(http.MethodHead), req(http.MethodGet, "Range", "bytes=0-1"), req(http.MethodGet, "Accept-Encoding", "identity")} {
		sent = nil
		resp, err := gzipTransport{answer("gzip", io.NopCloser(strings.NewReader("raw")))}.RoundTrip(r)
		if err != nil || resp.Uncompressed || resp.Header.Get("Content-Encoding") != "gzip" || len(sent) != 1 || sent[0] != r.Header.Get("Accept-Encoding") {
			t.Fatalf("%s %v: %v, Uncompressed %v, Content-Encoding %q, sent %q", r.Method, r.Header, err, resp.Uncompressed, resp.Header.Get("Content-Encoding"), sent)
		}
	}

	r := req(http.MethodGet)
	sent = nil
	resp, err := gzipTransport{answer("", io.NopCloser(strings.NewReader("plain!!")))}.RoundTrip(r)
	if err != nil || r.Header.Get("Accept-Encoding") != "" || len(sent) != 1 || sent[0] != "gzip" {
		t.Fatalf("the request given changed or gzip not asked: %v, %q, sent %q", err, r.Header.Get("Accept-Encoding"), sent)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "plain!!" || resp.Uncompressed || resp.ContentLength != 7 {
		t.Fatalf("an answer that is not gzip: %q, Uncompressed %v, ContentLength %d", b, resp.Uncompressed, resp.ContentLength)
	}

	resp, err = gzipTransport{answer("gzip", http.NoBody)}.RoundTrip(req(http.MethodGet))
	if err != nil || resp.Body != http.NoBody || resp.Uncompressed {
		t.Fatalf("no body: %v, %T, Uncompressed %v", err, resp.Body, resp.Uncompressed)
	}

	resp, err = gzipTransport{answer("gzip", io.NopCloser(strings.NewReader("not gzip at all")))}.RoundTrip(req(http.MethodGet))
	if err != nil || !resp.Uncompressed || resp.ContentLength != -1 || resp.Header.Get("Content-Length") != "" {
		t.Fatalf("gzip answer: %v, Uncompressed %v, ContentLength %d", err, resp.Uncompressed, resp.ContentLength)
	}
	_, err1 := io.ReadAll(resp.Body)
	_, err2 := resp.Body.Read(make([]byte, 1))
	if err1 == nil || err2 != err1 {
		t.Fatalf("a body that is not gzip: %v, then %v", err1, err2)
	}

	pr, pw := io.Pipe()
	resp, err = gzipTransport{answer("gzip", pr)}.RoundTrip(req(http.MethodGet))
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 10))
		read <- err
	}()
	resp.Body.Close()
	if err := <-read; err == nil {
		t.Fatal("a Read waiting for the body did not fail once the body was closed")
	}
	_ = pw.Close()
}
