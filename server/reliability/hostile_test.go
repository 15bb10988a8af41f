package reliability

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/wire"
)

// hostile is a raw HTTPS client of one server, authenticated as admin.
type hostile struct {
	srv   *apiserver.APIServer
	host  string
	tls   *tls.Config
	token string
	http  *http.Client
}

func newHostile(t *testing.T, srv *apiserver.APIServer) *hostile {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.Credentials().CAPEM)
	u, _ := url.Parse(srv.URL())
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	tr := &http.Transport{TLSClientConfig: tc.Clone(), ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &hostile{srv: srv, host: u.Host, tls: tc, token: srv.Credentials().AdminToken,
		http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// do sends one request and returns the status code and the decoded Status
// (zero when the body is not one), or the transport error.
func (h *hostile) do(method, path, contentType string, body []byte, header http.Header) (int, wire.Status, error) {
	req, err := http.NewRequest(method, h.srv.URL()+path, bytes.NewReader(body))
	if err != nil {
		return 0, wire.Status{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		return 0, wire.Status{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var st wire.Status
	_ = json.Unmarshal(b, &st)
	return resp.StatusCode, st, nil
}

// expect checks that a request got one of the allowed (code, reason)
// answers as a Status.
func (h *hostile) expect(t testing.TB, method, path, contentType string, body []byte, allowed ...string) {
	t.Helper()
	code, st, err := h.do(method, path, contentType, body, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, trim(path), err)
	}
	got := fmt.Sprintf("%d %s", code, st.Reason)
	for _, a := range allowed {
		if code < 300 && strings.HasPrefix(a, fmt.Sprintf("%d ", code)) {
			return // success bodies are objects, not Status
		}
		if got == a && st.Kind == "Status" && st.Code == int32(code) {
			return
		}
	}
	t.Errorf("%s %s: got %s (%q), want one of %q", method, trim(path), got, trim(st.Message), allowed)
}

func trim(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// TestHostileInput sends malformed and abusive requests over HTTPS. Each
// must get a Status with the right code and reason, or a closed
// connection; afterwards the server must still serve.
func TestHostileInput(t *testing.T) {
	// A short header timeout keeps the slowloris and silent-TCP cases quick;
	// they check the mechanism, whatever the value.
	srv := startServer(t, "", func(o *apiserver.Options) { o.ReadHeaderTimeout = 2 * time.Second })
	h := newHostile(t, srv)
	const cms = "/api/v1/namespaces/default/configmaps"

	t.Run("all", func(t *testing.T) { hostileCases(t, h) })
	if t.Failed() {
		return
	}
	if code, _, err := h.do("GET", "/readyz", "", nil, nil); err != nil || code != 200 {
		t.Fatalf("server unhealthy after hostile input: %d %v", code, err)
	}
	// The server still writes and reads.
	h.expect(t, "POST", cms, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"}}`), "201 ")
}

// hostileCases run in parallel; the caller checks health after all end.
func hostileCases(t *testing.T, h *hostile) {
	const cms = "/api/v1/namespaces/default/configmaps"
	t.Run("slowloris", func(t *testing.T) { t.Parallel(); slowloris(t, h) })
	t.Run("silent TCP before TLS", func(t *testing.T) { t.Parallel(); silentConn(t, h) })
	t.Run("huge headers", func(t *testing.T) {
		t.Parallel()
		hdr := http.Header{"X-Big": {strings.Repeat("a", 2<<20)}}
		code, _, err := h.do("GET", "/api", "", nil, hdr)
		if err == nil && code != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("2 MiB header: got %d, want 431 or a closed connection", code)
		}
	})
	t.Run("deep JSON nesting", func(t *testing.T) {
		t.Parallel()
		for _, body := range [][]byte{
			bytes.Repeat([]byte("["), 100_000),
			[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":` + strings.Repeat(`{"a":`, 100_000)),
			[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep2"},"x":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`),
		} {
			h.expect(t, "POST", cms, "application/json", body, "400 BadRequest", "422 Invalid")
		}
		h.expect(t, "PATCH", cms+"/deep", "application/merge-patch+json", bytes.Repeat([]byte("["), 100_000),
			"400 BadRequest", "422 Invalid", "404 NotFound")
	})
	t.Run("many keys near the body limit", func(t *testing.T) {
		t.Parallel()
		// Up to the body limit, storage takes the value (etcd's own
		// 1.5 MiB request limit is raised for the embedded member).
		h.expect(t, "POST", cms, "application/json", manyKeys("manykeys", 3<<20-4096), "201 ", "422 Invalid", "413 RequestEntityTooLarge")
		h.expect(t, "POST", cms, "application/json", manyKeys("toomanykeys", 4<<20), "413 RequestEntityTooLarge")
		dup := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dupkeys"},"data":{` +
			strings.Repeat(`"a":"",`, 400_000) + `"a":""}}`)
		h.expect(t, "POST", cms, "application/json", dup, "201 ", "400 BadRequest", "422 Invalid", "413 RequestEntityTooLarge")
		// A selector that is merely long is valid; it must not hurt.
		h.expect(t, "GET", cms+"?labelSelector="+strings.Repeat("a,", 50_000)+"a", "", nil, "200 ")
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		t.Parallel()
		h.expect(t, "POST", cms, "application/json", []byte("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bad\xff\"}}"),
			"400 BadRequest", "422 Invalid")
		h.expect(t, "POST", cms, "application/json", []byte("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"okname\",\"labels\":{\"k\xfe\":\"v\"}}}"),
			"400 BadRequest", "422 Invalid")
		h.expect(t, "POST", cms, "application/json", []byte("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"okname2\",\"labels\":{\"k\":\"v\xc3\"}}}"),
			"400 BadRequest", "422 Invalid")
		h.expect(t, "GET", cms+"/%FF%FE", "", nil, "404 NotFound", "400 BadRequest")
		h.expect(t, "GET", cms+"?labelSelector=a%3D%FF", "", nil, "400 BadRequest")
	})
	t.Run("garbage continue tokens", func(t *testing.T) {
		t.Parallel()
		outside := base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"../../secrets/"}`))
		for _, tok := range []string{"garbage", "%00%01", "eyJ2IjoiIn0", outside, strings.Repeat("A", 100_000)} {
			h.expect(t, "GET", cms+"?limit=1&continue="+tok, "", nil, "400 BadRequest", "410 Expired", "410 Gone")
		}
	})
	t.Run("bad selectors", func(t *testing.T) {
		t.Parallel()
		for _, q := range []string{
			"labelSelector=a+in+(b", "labelSelector=%3D%3D%3D", "labelSelector=a%3D" + strings.Repeat("b", 100_000),
			"fieldSelector=metadata.foo%3Dbar", "fieldSelector=%21%21", "limit=abc",
			"resourceVersion=abc", "resourceVersionMatch=Exact",
		} {
			h.expect(t, "GET", cms+"?"+q, "", nil, "400 BadRequest", "422 Invalid")
		}
		// Negative numbers kube-apiserver accepts: a limit is no limit,
		// a watch with a timeout below zero ends at once.
		h.expect(t, "GET", cms+"?limit=-5", "", nil, "200 ")
		h.expect(t, "GET", cms+"?timeoutSeconds=-1&watch=1", "", nil, "200 ")
	})
	t.Run("wrong content types", func(t *testing.T) {
		t.Parallel()
		cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ct"}}`)
		h.expect(t, "POST", cms, "text/plain", cm, "415 UnsupportedMediaType")
		h.expect(t, "POST", cms, "application/x-www-form-urlencoded", cm, "415 UnsupportedMediaType")
		h.expect(t, "POST", cms, "application/yaml", []byte("a: [b"), "415 UnsupportedMediaType", "400 BadRequest")
		h.expect(t, "PATCH", cms+"/ct", "application/json", []byte(`{}`), "415 UnsupportedMediaType")
		h.expect(t, "PATCH", cms+"/ct", "image/png", []byte{0x89, 'P', 'N', 'G'}, "415 UnsupportedMediaType")
	})
	t.Run("TLS garbage", func(t *testing.T) {
		t.Parallel()
		c, err := net.DialTimeout("tcp", h.host, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = c.Write(bytes.Repeat([]byte{0x16, 0x03, 0x01, 0xff, 0xff}, 1000))
		if _, err := io.ReadAll(c); err != nil && !isClosed(err) {
			t.Fatalf("garbage handshake: connection not closed: %v", err)
		}
	})
}

// manyKeys is a ConfigMap whose data has as many small keys as fit size
// bytes.
func manyKeys(name string, size int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{`, name)
	for i := 0; b.Len() < size-32; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":""`, i)
	}
	b.WriteString("}}")
	return b.Bytes()
}

func isClosed(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}

// slowloris trickles a request's headers one line at a time; the server
// must close the connection once its ReadHeaderTimeout (2 s here, 10 s by
// default) has passed, not wait for the headers forever.
func slowloris(t *testing.T, h *hostile) {
	// HTTP/1.1, where headers arrive as text and can be trickled.
	tc := h.tls.Clone()
	tc.NextProtos = []string{"http/1.1"}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", h.host, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	begin := time.Now()
	if _, err := io.WriteString(c, "GET /api HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := io.ReadAll(c)
		closed <- err
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case err := <-closed:
			if err != nil && !isClosed(err) {
				t.Fatalf("slowloris connection not closed in 30s: %v", err)
			}
			if el := time.Since(begin); el > 10*time.Second {
				t.Fatalf("slowloris closed after %v", el)
			}
			t.Logf("slowloris closed after %v", time.Since(begin).Round(100*time.Millisecond))
			return
		case <-tick.C:
			_, _ = fmt.Fprintf(c, "X-Slow-%d: y\r\n", i)
		}
	}
}

// silentConn opens TCP and sends nothing: the TLS handshake must time out.
func silentConn(t *testing.T, h *hostile) {
	c, err := net.DialTimeout("tcp", h.host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	begin := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.ReadAll(c)
	if err != nil && !isClosed(err) {
		t.Fatalf("silent connection still open after 30s: %v", err)
	}
	t.Logf("silent connection closed after %v", time.Since(begin).Round(100*time.Millisecond))
}
